#!/usr/bin/env bash
# The study in miniature, on a CPU: do relative positions translate sentences longer than
# any seen in training, where absolute positions fail?
#
# Usage: bash scripts/demo.sh [options]
#
# The same scripts as the WMT recipes (scripts/reproduce/), on a synthetic language pair:
#   1. prepare-toy.sh: a generated corpus (scripts/lib/toy_corpus.py: SOV source,
#      SVO target with agreement, clauses chained to any length; 20,000 training sentences
#      of 12-40 words), joint BPE (subword-nmt), training pairs filtered to --train-limit
#      subword tokens on both sides, binarized (fairseq-preprocess)
#   2. build-test-sets.sh: the test set (300 sentences of 12-50 words, reaching about twice
#      the training limit in subword tokens) and its concat_seq (pairs 1+2, 3+4, ... joined)
#      (the word ranges scale with --train-limit; these are for 50)
#   3. train.sh: each system the same size (2+2 layers of width 64) and budget (--updates),
#      on CPU, as many at a time as there are cores (one core each); fairseq's progress
#      lines are shown prefixed with the system's name
#   4. translate.sh: both test sets (fairseq-generate, beam 5)
#   5. the length-bucket report (python -m analysis.report) for each test set: BLEU and TER
#      per length bucket with 95% confidence intervals and paired tests against the first
#      system.  A pair's length is the longer of its two sides in subword tokens: the filter
#      removed training pairs by either side, so that is what "beyond the training lengths"
#      means here.
# Each step is skipped when its output is complete for the same options, so a re-run resumes;
# a step whose options changed is redone.  The demo deletes only what it made: a folder in
# --out-dir that it did not make is refused, by name, before any work.  It prints how long
# each phase took.
#
# Options:
#   --systems LIST       comma-separated architectures, the first is the baseline (default
#                        transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos)
#   --train-limit N      longest training pair, in subword tokens (default 50)
#   --updates N          training updates per system (default 3000)
#   --quick              a smaller, faster run (fewer sentences and updates) for CI; its
#                        numbers show nothing
#   --seed N             seed of the corpus and of training (default 1)
#   --out-dir DIR        where everything goes (default runs/demo in the checkout)
#   --threads N          systems trained at a time, one core each (default: all cores)
#   --gpus N             train and translate on N GPUs instead (fp16), --threads systems at a
#                        time shared out among them; a model trained on the other device is
#                        trained again (default 0: CPU only, the same translations on every run)
#   -h, --help           this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"
source "$PL_LIB/demo.sh"

demo_cli "$@"
[[ ${#DEMO_REST[@]} -eq 0 ]] || pl_die "unknown option '${DEMO_REST[0]}' (see --help)"
demo_refuse_unless_ours "$OUT/data" demo.settings
for arch in "${ARCHS[@]}"; do demo_refuse_unless_ours "$OUT/$arch" demo.settings; done
for set in "${DEMO_TEST_SETS[@]}"; do demo_refuse_unless_ours "$OUT/report/$set" demo.command; done

START=$SECONDS
# 1-2. data and test sets
demo_prepare
# 3-4. per system: training, then both test sets translated; one system per core
run_system() { demo_system "$1" "$SEED" "$OUT/$1"; }
pl_run_systems run_system "see $OUT/*/train.log and $OUT/*/*/generate.err" "${ARCHS[@]}"
demo_phase_took "training and translating"

# 5. the length-bucket reports
REPORTS=()
for set in "${DEMO_TEST_SETS[@]}"; do
  systems=()
  for arch in "${ARCHS[@]}"; do systems+=("$arch=$OUT/$arch/$set/hyp.txt"); done
  pl_length_report demo.command "$OUT/report/$set" "$DATA/testsets/$set" src tgt "${systems[@]}" -- \
    --baseline "${ARCHS[0]}" --tokenize none --metrics bleu,ter --edges "$(demo_edges "$set")" \
    --train-limit "$LIMIT" --bootstrap 200 --seed "$SEED" \
    --title "Demo, $set: trained on pairs of up to $LIMIT subword tokens (length: longer side)"
  REPORTS+=("$OUT/report/$set")
done
demo_phase_took "the reports"
pl_log "done in $((SECONDS - START)) s"
for r in "${REPORTS[@]}"; do echo "report: $r (report.md, report.json, buckets.png, lengths.png)"; done
