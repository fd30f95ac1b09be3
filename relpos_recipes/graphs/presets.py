"""The model sizes and budgets the recipes share (what SMOKE=1 shrinks them to, the Tatoeba
model) and the Tatoeba study's buckets."""
from relpos_analysis.buckets import limit_edges

# Tiny settings for SMOKE=1: the same steps on a few thousand lines, with 1+1-layer models.
SMOKE_MODEL = ("--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
               "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
               "--encoder-attention-heads", "2", "--decoder-attention-heads", "2")
SMOKE_TRAIN = (*SMOKE_MODEL, "--max-update", "16", "--batch-tokens", "1200", "--log-interval", "5")
SMOKE_TRANSLATE = ("--beam", "2", "--max-tokens", "30000", "--max-len-a", "1.2", "--max-len-b", "5")
SMOKE_TEST_LINES = 10
WMT_SHARDS = 8  # prepare-wmt19-*.sh's default: 8 checkpoints and dev evaluations per epoch


TATOEBA_SETS = ("test", "concat_seq", "concat3_seq")
TATOEBA_MODEL = ("--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "256",
                 "--decoder-embed-dim", "256", "--encoder-ffn-embed-dim", "1024", "--decoder-ffn-embed-dim", "1024",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--dropout", "0.1",
                 "--share-decoder-input-output-embed")
TATOEBA_LIMIT = 16


def tatoeba_edges(test_set: str, limit: int) -> str:
    """Buckets at multiples of the limit: 1, 1.5, 2 and 3x for the test set, 1-4x for the
    joined sets."""
    if test_set == "test":
        return ",".join(map(str, limit_edges(limit)))  # the report's default for the limit
    return f"{limit},{limit * 2},{limit * 3},{limit * 4}"


# SCAN at Csordas et al.'s (2021) settings: 3+3 layers of width 128, 8 heads, FFN 256, dropout
# 0.5; batches of 256 sentences (--batch-size; SCAN_BATCH_TOKENS never binds: 256 pairs of at
# most 49 tokens), Adam at a fixed 1e-3, gradient norm clipped at 5, plain cross-entropy
SCAN_MODEL = ("--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "128",
              "--decoder-embed-dim", "128", "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
              "--encoder-attention-heads", "8", "--decoder-attention-heads", "8", "--dropout", "0.5")
SCAN_OPTIMISATION = ("--batch-size", "256", "--clip-norm", "5", "--label-smoothing", "0")
SCAN_BATCH_TOKENS = 16384
SCAN_LR = "1e-3"
# greedy; up to 100 actions, beyond SCAN's longest (48), so that a free decoding that runs on is seen
SCAN_TRANSLATE = ("--beam", "1", "--max-len-a", "0", "--max-len-b", "100")
# SMOKE=1: every 40th pair of each part, the tiny model, batches of 32 sentences
SCAN_SMOKE_EVERY = 40
SCAN_SMOKE_OPTIMISATION = ("--batch-size", "32", "--clip-norm", "5", "--label-smoothing", "0")
