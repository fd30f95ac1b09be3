"""A synthetic parallel corpus whose sentences can be made arbitrarily long.

The demo trains tiny systems on short sentences and tests them on far longer ones.  For that to measure positional encodings, translation must need word order
(a bag-of-words model fails), and a long sentence must be translatable piece by piece
with reorderings as local as in the short ones.  This module makes such a language pair.
It lives beside the scripts that run it (prepare-toy.sh), not in the model plugin, and
imports only the standard library: generating a corpus starts no torch.

Source language (``src``): subject-object-verb.  A clause is::

    SUBJECT  [REL-OBJECT REL-VERB+mi]  [OBJECT]  [PLACE POSTPOSITION]  [ADVERB]  VERB

A noun phrase is ``NOUN ADJECTIVE*``: the noun carries number (``-ti`` plural),
definiteness (``-ra`` definite) and case (``-ku`` on objects), adjectives repeat the
number.  The relative clause comes before the object it describes ("the [cat chased-that]
dog").  Verbs carry tense (``-do`` past, ``-sa`` future) and negation (``-ze``), not person.

Target language (``tgt``): subject-verb-object.  The same clause is::

    SUBJECT  [non] VERB  [OBJECT [ke [non] REL-VERB REL-OBJECT]]  [PREPOSITION PLACE]  [ADVERB]

A noun phrase is ``ARTICLE ADJECTIVE* NOUN`` with the adjectives in mirror order.
Negation is the word ``non`` before the verb.

What reorders: the clause-final verb moves to second place; adjectives move before their
noun and reverse; postpositions become prepositions; the relative clause moves behind its
noun and its verb in front of its object; the negation suffix becomes a word.  What agrees
(information the target needs from elsewhere in the source): the verb's ending fuses tense
with the subject's person and number, and a relative clause's verb agrees with the noun it
describes; articles and adjective endings follow the target noun's gender (a lexical
property no source word shows) and number; the article shows the source noun's
definiteness suffix.

Length: a sentence is clauses joined by conjunctions (and, but, because, while, so) and
ended by a full stop; each clause is translated on its own, in order.  A clause has 2 to
10 source words (at most 17 target words), so every reordering stays inside that window
whatever the sentence length.  The length of a sentence is its number of source tokens,
conjunctions and the full stop included; :func:`generate_pairs` draws it uniformly from
the range asked for, then splits it into clauses of random sizes.

Words are invented stems (450 per language) plus inflection suffixes, lowercase ASCII,
about 3,000 word types per language, so BPE with a few thousand merges has morphology to
find.  The lexicon comes from ``lexicon_seed``, fixed by default, not from the sentence
seed: training and test sets drawn with different seeds are in the same language pair.

Only ``random.Random.random()`` is drawn from, never ``choice``/``shuffle``/``randrange``:
Python guarantees that sequence alone across versions, so a seed gives byte-identical
files on every Python from 3.8 on.
"""
import argparse
import itertools
import random
import sys
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from . import write_lines

LEXICON_SEED = 2019

# Stems per open word class; the same number of concepts exists in both languages.
WORD_CLASS_SIZES = {
    "noun": 240,
    "adjective": 60,
    "transitive_verb": 80,
    "intransitive_verb": 40,
    "adverb": 30,
}
# The same grammar over fewer stems: learnable by a tiny model in minutes on a CPU (the demo).
SMALL_WORD_CLASS_SIZES = {
    "noun": 32,
    "adjective": 8,
    "transitive_verb": 12,
    "intransitive_verb": 6,
    "adverb": 4,
}
LEXICON_SIZES = {"full": WORD_CLASS_SIZES, "small": SMALL_WORD_CLASS_SIZES}

MIN_CLAUSE_WORDS = 2  # pronoun + intransitive verb
MAX_CLAUSE_WORDS = 10
MIN_SENTENCE_WORDS = MIN_CLAUSE_WORDS + 1  # one clause and the full stop

NUMBERS = ("sg", "pl")
DEFINITENESS = ("indefinite", "definite")
GENDERS = ("m", "f")
TENSES = ("present", "past", "future")
PERSONS = ("1sg", "2sg", "3sg", "1pl", "2pl", "3pl")
POLARITIES = ("affirmative", "negative")
NEGATIVE_PROBABILITY = 0.25
CASES = ("nominative", "accusative")
VERB_ROLES = ("main", "relative")
FULL_STOP = "."
CONJUNCTIONS = ("and", "but", "because", "while", "so")
ADPOSITIONS = ("in", "on", "with", "without", "behind", "near")

# Source stems are open syllables, suffixes start with a consonant.  No open-class word of
# one language can be a word of the other: their stems begin with disjoint consonants.
SOURCE_ONSETS = "bdgkptvz"
SOURCE_VOWELS = "aeiou"
SOURCE_NUMBER_SUFFIX = {"sg": "", "pl": "ti"}
SOURCE_DEFINITENESS_SUFFIX = {"indefinite": "", "definite": "ra"}
SOURCE_CASE_SUFFIX = {"nominative": "", "accusative": "ku"}
SOURCE_TENSE_SUFFIX = {"present": "", "past": "do", "future": "sa"}
SOURCE_POLARITY_SUFFIX = {"affirmative": "", "negative": "ze"}
SOURCE_VERB_ROLE_SUFFIX = {"main": "", "relative": "mi"}
SOURCE_ADVERB_SUFFIX = "le"
SOURCE_PRONOUNS = {"1sg": "na", "2sg": "ko", "3sg": "su", "1pl": "nami", "2pl": "komi", "3pl": "sumi"}
SOURCE_CONJUNCTIONS = {"and": "ba", "but": "demo", "because": "zaka", "while": "tope", "so": "gisu"}
SOURCE_ADPOSITIONS = {
    "in": "ni", "on": "pe", "with": "to", "without": "zonu", "behind": "kabe", "near": "tiki"
}

# Target stems end in a closed syllable, suffixes start with a vowel.
TARGET_ONSETS = "fhjlmnrsw"
TARGET_VOWELS = "aeiou"
TARGET_CODAS = "lnrs"
TARGET_NOUN_PLURAL_SUFFIX = {"m": "i", "f": "as"}
TARGET_ADJECTIVE_SUFFIX = {("m", "sg"): "o", ("f", "sg"): "a", ("m", "pl"): "i", ("f", "pl"): "e"}
TARGET_TENSE_SUFFIX = {"present": "", "past": "av", "future": "ir"}
TARGET_PERSON_SUFFIX = {"1sg": "o", "2sg": "es", "3sg": "et", "1pl": "amo", "2pl": "ate", "3pl": "ant"}
TARGET_ADVERB_SUFFIX = "ement"
TARGET_PRONOUNS = {"1sg": "jo", "2sg": "tu", "3sg": "il", "1pl": "nos", "2pl": "vos", "3pl": "ils"}
TARGET_CONJUNCTIONS = {"and": "e", "but": "mas", "because": "porke", "while": "mentre", "so": "alor"}
TARGET_ADPOSITIONS = {
    "in": "en", "on": "sur", "with": "kon", "without": "sen", "behind": "tras", "near": "prew"
}
TARGET_RELATIVE_MARKER = "ke"
TARGET_NEGATION = "non"
TARGET_ARTICLES = {
    ("definite", "m", "sg"): "lo",
    ("definite", "f", "sg"): "la",
    ("definite", "m", "pl"): "li",
    ("definite", "f", "pl"): "le",
    ("indefinite", "m", "sg"): "un",
    ("indefinite", "f", "sg"): "una",
    ("indefinite", "m", "pl"): "unos",
    ("indefinite", "f", "pl"): "unas",
}

T = TypeVar("T")


class Analysis(NamedTuple):
    """What one surface word is: a concept of a word class, and its inflection."""

    word_class: str  # noun, adjective, ..., pronoun, conjunction, adposition, article, ...
    concept: Union[int, str]  # index of an open-class stem, or a closed-class name
    features: Tuple[str, ...]  # inflection, e.g. ("pl", "definite", "accusative") or ("past", "3sg")


@dataclass(frozen=True)
class Lexicon:
    """Both languages' words, in both directions; every surface word has one analysis."""

    source_words: Dict[Analysis, str]
    target_words: Dict[Analysis, str]
    source_analyses: Dict[str, Analysis]
    target_analyses: Dict[str, Analysis]
    target_noun_genders: Tuple[str, ...]  # indexed by noun concept
    class_sizes: Dict[str, int]  # stems per open word class

    def source(self, word_class: str, concept: Union[int, str], *features: str) -> str:
        return self.source_words[Analysis(word_class, concept, features)]

    def target(self, word_class: str, concept: Union[int, str], *features: str) -> str:
        return self.target_words[Analysis(word_class, concept, features)]


def _pick_index(rng: random.Random, count: int) -> int:
    # random() is the one draw whose sequence Python promises not to change (see docstring).
    return int(rng.random() * count)


def _choose(rng: random.Random, items: Sequence[T]) -> T:
    return items[_pick_index(rng, len(items))]


def _invent_source_stem(rng: random.Random) -> str:
    syllables = 2 + _pick_index(rng, 2)
    return "".join(_choose(rng, SOURCE_ONSETS) + _choose(rng, SOURCE_VOWELS) for _ in range(syllables))


def _invent_target_stem(rng: random.Random) -> str:
    open_syllables = 1 + _pick_index(rng, 2)
    stem = "".join(_choose(rng, TARGET_ONSETS) + _choose(rng, TARGET_VOWELS) for _ in range(open_syllables))
    return stem + _choose(rng, TARGET_ONSETS) + _choose(rng, TARGET_VOWELS) + _choose(rng, TARGET_CODAS)


def _paradigm(stem: str, *suffix_tables: Dict[str, str]) -> Dict[Tuple[str, ...], str]:
    """Every combination of one feature from each table: the features, and the stem with
    their suffixes in table order."""
    return {
        tuple(feature for feature, _ in combination): stem + "".join(suffix for _, suffix in combination)
        for combination in itertools.product(*(table.items() for table in suffix_tables))
    }


def _source_inflections(word_class: str, stem: str) -> Dict[Tuple[str, ...], str]:
    if word_class == "noun":
        return _paradigm(stem, SOURCE_NUMBER_SUFFIX, SOURCE_DEFINITENESS_SUFFIX, SOURCE_CASE_SUFFIX)
    if word_class == "adjective":
        return _paradigm(stem, SOURCE_NUMBER_SUFFIX)
    if word_class == "transitive_verb":
        return _paradigm(stem, SOURCE_TENSE_SUFFIX, SOURCE_POLARITY_SUFFIX, SOURCE_VERB_ROLE_SUFFIX)
    if word_class == "intransitive_verb":
        return _paradigm(stem, SOURCE_TENSE_SUFFIX, SOURCE_POLARITY_SUFFIX)
    if word_class == "adverb":
        return {(): stem + SOURCE_ADVERB_SUFFIX}
    raise ValueError(f"unknown word class {word_class!r}")


def _target_inflections(word_class: str, stem: str, gender: str) -> Dict[Tuple[str, ...], str]:
    if word_class == "noun":
        return {("sg",): stem, ("pl",): stem + TARGET_NOUN_PLURAL_SUFFIX[gender]}
    if word_class == "adjective":
        return {
            (adjective_gender, number): stem + TARGET_ADJECTIVE_SUFFIX[adjective_gender, number]
            for adjective_gender in GENDERS
            for number in NUMBERS
        }
    if word_class in ("transitive_verb", "intransitive_verb"):
        return _paradigm(stem, TARGET_TENSE_SUFFIX, TARGET_PERSON_SUFFIX)
    if word_class == "adverb":
        return {(): stem + TARGET_ADVERB_SUFFIX}
    raise ValueError(f"unknown word class {word_class!r}")


class _Vocabulary:
    """One language's words while they are being invented; refuses homographs."""

    def __init__(self) -> None:
        self.words: Dict[Analysis, str] = {}
        self.analyses: Dict[str, Analysis] = {}

    def fits(self, forms: Dict[Tuple[str, ...], str]) -> bool:
        surfaces = list(forms.values())
        return len(set(surfaces)) == len(surfaces) and not any(s in self.analyses for s in surfaces)

    def add(self, word_class: str, concept: Union[int, str], forms: Dict[Tuple[str, ...], str]) -> None:
        if not self.fits(forms):
            raise ValueError(f"{word_class} {concept!r} would make a homograph: {forms}")
        for features, surface in forms.items():
            analysis = Analysis(word_class, concept, features)
            self.words[analysis] = surface
            self.analyses[surface] = analysis


def _closed_class_vocabulary(
    pronouns: Dict[str, str], conjunctions: Dict[str, str], adpositions: Dict[str, str]
) -> _Vocabulary:
    vocabulary = _Vocabulary()
    vocabulary.add("punctuation", FULL_STOP, {(): FULL_STOP})
    closed_classes = (("pronoun", pronouns), ("conjunction", conjunctions), ("adposition", adpositions))
    for word_class, words in closed_classes:
        for concept, word in words.items():
            vocabulary.add(word_class, concept, {(): word})
    return vocabulary


def build_lexicon(lexicon_seed: int = LEXICON_SEED, lexicon_size: str = "full") -> Lexicon:
    """Invent both languages' open-class stems; every inflected form is a distinct word."""
    class_sizes = LEXICON_SIZES[lexicon_size]
    rng = random.Random(lexicon_seed)
    source = _closed_class_vocabulary(SOURCE_PRONOUNS, SOURCE_CONJUNCTIONS, SOURCE_ADPOSITIONS)
    target = _closed_class_vocabulary(TARGET_PRONOUNS, TARGET_CONJUNCTIONS, TARGET_ADPOSITIONS)
    target.add("relative_marker", "that", {(): TARGET_RELATIVE_MARKER})
    target.add("negation", "not", {(): TARGET_NEGATION})
    for (definiteness, gender, number), article in TARGET_ARTICLES.items():
        target.add("article", definiteness, {(gender, number): article})

    noun_genders: List[str] = []
    for word_class, size in class_sizes.items():
        for concept in range(size):
            forms = _source_inflections(word_class, _invent_source_stem(rng))
            while not source.fits(forms):
                forms = _source_inflections(word_class, _invent_source_stem(rng))
            source.add(word_class, concept, forms)

            gender = _choose(rng, GENDERS) if word_class == "noun" else ""
            forms = _target_inflections(word_class, _invent_target_stem(rng), gender)
            while not target.fits(forms):
                forms = _target_inflections(word_class, _invent_target_stem(rng), gender)
            target.add(word_class, concept, forms)
            if word_class == "noun":
                noun_genders.append(gender)

    return Lexicon(
        source.words, target.words, source.analyses, target.analyses, tuple(noun_genders), class_sizes
    )


@dataclass(frozen=True)
class ClauseTemplate:
    """The shape of a clause; None means the part is absent, a number counts adjectives."""

    subject_adjectives: Optional[int]  # None: a pronoun subject
    object_adjectives: Optional[int]  # None: an intransitive verb
    relative_object_adjectives: Optional[int]  # None: no relative clause on the object
    place_adjectives: Optional[int]  # None: no adpositional phrase
    has_adverb: bool

    def source_words(self) -> int:
        words = 1  # the verb
        words += 1 if self.subject_adjectives is None else 1 + self.subject_adjectives
        if self.object_adjectives is not None:
            words += 1 + self.object_adjectives
        if self.relative_object_adjectives is not None:
            words += 2 + self.relative_object_adjectives  # its object noun and its verb
        if self.place_adjectives is not None:
            words += 2 + self.place_adjectives  # the noun and the postposition
        return words + (1 if self.has_adverb else 0)


def _templates_by_length() -> Dict[int, List[ClauseTemplate]]:
    lengths = range(MIN_CLAUSE_WORDS, MAX_CLAUSE_WORDS + 1)
    templates: Dict[int, List[ClauseTemplate]] = {length: [] for length in lengths}
    for subject_adjectives in (None, 0, 1, 2):
        for object_adjectives in (None, 0, 1, 2):
            # Only a transitive clause has an object for a relative clause to describe.
            relative_options = (None,) if object_adjectives is None else (None, 0, 1)
            for relative_object_adjectives in relative_options:
                for place_adjectives in (None, 0, 1):
                    for has_adverb in (False, True):
                        template = ClauseTemplate(
                            subject_adjectives,
                            object_adjectives,
                            relative_object_adjectives,
                            place_adjectives,
                            has_adverb,
                        )
                        if template.source_words() <= MAX_CLAUSE_WORDS:
                            templates[template.source_words()].append(template)
    return templates


TEMPLATES_BY_LENGTH = _templates_by_length()


@dataclass(frozen=True)
class NounPhrase:
    noun: int
    number: str
    definiteness: str
    adjectives: Tuple[int, ...]  # in source order

    @property
    def person(self) -> str:
        return "3" + self.number


@dataclass(frozen=True)
class RelativeClause:
    """ "that VERB OBJECT", describing the clause's object, which is its subject."""

    verb: int  # a transitive verb
    tense: str
    polarity: str
    object: NounPhrase


@dataclass(frozen=True)
class Place:
    adposition: str
    phrase: NounPhrase


@dataclass(frozen=True)
class Clause:
    subject: Union[str, NounPhrase]  # a person such as "1pl" for a pronoun subject
    verb: int  # transitive if there is an object, else intransitive
    tense: str
    polarity: str
    object: Optional[NounPhrase]
    relative: Optional[RelativeClause]
    place: Optional[Place]
    adverb: Optional[int]


def _sample_noun_phrase(rng: random.Random, adjective_count: int, class_sizes: Dict[str, int]) -> NounPhrase:
    noun = _pick_index(rng, class_sizes["noun"])
    number = _choose(rng, NUMBERS)
    definiteness = _choose(rng, DEFINITENESS)
    adjectives: List[int] = []
    while len(adjectives) < adjective_count:  # distinct, so no "big big dog"
        adjective = _pick_index(rng, class_sizes["adjective"])
        if adjective not in adjectives:
            adjectives.append(adjective)
    return NounPhrase(noun, number, definiteness, tuple(adjectives))


def _sample_polarity(rng: random.Random) -> str:
    return "negative" if rng.random() < NEGATIVE_PROBABILITY else "affirmative"


def _sample_clause(rng: random.Random, template: ClauseTemplate, class_sizes: Dict[str, int]) -> Clause:
    if template.subject_adjectives is None:
        subject: Union[str, NounPhrase] = _choose(rng, PERSONS)
    else:
        subject = _sample_noun_phrase(rng, template.subject_adjectives, class_sizes)
    transitive = template.object_adjectives is not None
    verb = _pick_index(rng, class_sizes["transitive_verb" if transitive else "intransitive_verb"])
    tense = _choose(rng, TENSES)
    polarity = _sample_polarity(rng)
    obj = None
    if template.object_adjectives is not None:
        obj = _sample_noun_phrase(rng, template.object_adjectives, class_sizes)
    relative = None
    if template.relative_object_adjectives is not None:
        relative = RelativeClause(
            _pick_index(rng, class_sizes["transitive_verb"]),
            _choose(rng, TENSES),
            _sample_polarity(rng),
            _sample_noun_phrase(rng, template.relative_object_adjectives, class_sizes),
        )
    place = None
    if template.place_adjectives is not None:
        place = Place(_choose(rng, ADPOSITIONS), _sample_noun_phrase(rng, template.place_adjectives, class_sizes))
    adverb = _pick_index(rng, class_sizes["adverb"]) if template.has_adverb else None
    return Clause(subject, verb, tense, polarity, obj, relative, place, adverb)


def _source_noun_phrase(lexicon: Lexicon, phrase: NounPhrase, case: str) -> List[str]:
    words = [lexicon.source("noun", phrase.noun, phrase.number, phrase.definiteness, case)]
    return words + [lexicon.source("adjective", adjective, phrase.number) for adjective in phrase.adjectives]


def _target_noun_phrase(lexicon: Lexicon, phrase: NounPhrase) -> List[str]:
    gender = lexicon.target_noun_genders[phrase.noun]
    words = [lexicon.target("article", phrase.definiteness, gender, phrase.number)]
    for adjective in reversed(phrase.adjectives):
        words.append(lexicon.target("adjective", adjective, gender, phrase.number))
    return words + [lexicon.target("noun", phrase.noun, phrase.number)]


def _source_clause(lexicon: Lexicon, clause: Clause) -> List[str]:
    if isinstance(clause.subject, NounPhrase):
        words = _source_noun_phrase(lexicon, clause.subject, "nominative")
    else:
        words = [lexicon.source("pronoun", clause.subject)]
    if clause.relative is not None:
        relative = clause.relative
        words += _source_noun_phrase(lexicon, relative.object, "accusative")
        verb = lexicon.source("transitive_verb", relative.verb, relative.tense, relative.polarity, "relative")
        words.append(verb)
    if clause.object is not None:
        words += _source_noun_phrase(lexicon, clause.object, "accusative")
    if clause.place is not None:
        # The postposition, not a case, marks the place.
        words += _source_noun_phrase(lexicon, clause.place.phrase, "nominative")
        words.append(lexicon.source("adposition", clause.place.adposition))
    if clause.adverb is not None:
        words.append(lexicon.source("adverb", clause.adverb))
    if clause.object is not None:
        words.append(lexicon.source("transitive_verb", clause.verb, clause.tense, clause.polarity, "main"))
    else:
        words.append(lexicon.source("intransitive_verb", clause.verb, clause.tense, clause.polarity))
    return words


def _target_negation(lexicon: Lexicon, polarity: str) -> List[str]:
    return [lexicon.target("negation", "not")] if polarity == "negative" else []


def _target_clause(lexicon: Lexicon, clause: Clause) -> List[str]:
    if isinstance(clause.subject, NounPhrase):
        words = _target_noun_phrase(lexicon, clause.subject)
        person = clause.subject.person
    else:
        words = [lexicon.target("pronoun", clause.subject)]
        person = clause.subject
    words += _target_negation(lexicon, clause.polarity)
    if clause.object is not None:
        words.append(lexicon.target("transitive_verb", clause.verb, clause.tense, person))
        words += _target_noun_phrase(lexicon, clause.object)
        if clause.relative is not None:
            relative = clause.relative
            words.append(lexicon.target("relative_marker", "that"))
            words += _target_negation(lexicon, relative.polarity)
            verb = lexicon.target("transitive_verb", relative.verb, relative.tense, clause.object.person)
            words.append(verb)
            words += _target_noun_phrase(lexicon, relative.object)
    else:
        words.append(lexicon.target("intransitive_verb", clause.verb, clause.tense, person))
    if clause.place is not None:
        words.append(lexicon.target("adposition", clause.place.adposition))
        words += _target_noun_phrase(lexicon, clause.place.phrase)
    if clause.adverb is not None:
        words.append(lexicon.target("adverb", clause.adverb))
    return words


def _clause_lengths(rng: random.Random, words: int) -> List[int]:
    """Split ``words`` source words into clauses and the conjunctions between them."""
    lengths: List[int] = []
    remaining = words
    while True:
        # A clause either uses up the rest exactly or leaves room for a conjunction and
        # a clause; MAX_CLAUSE_WORDS >= 2 * MIN_CLAUSE_WORDS keeps this never empty.
        candidates = [
            length
            for length in range(MIN_CLAUSE_WORDS, MAX_CLAUSE_WORDS + 1)
            if length == remaining or remaining - length - 1 >= MIN_CLAUSE_WORDS
        ]
        length = _choose(rng, candidates)
        lengths.append(length)
        if length == remaining:
            return lengths
        remaining -= length + 1


def _generate_pair(rng: random.Random, lexicon: Lexicon, min_words: int, max_words: int) -> Tuple[str, str]:
    sentence_words = min_words + _pick_index(rng, max_words - min_words + 1)
    source: List[str] = []
    target: List[str] = []
    for index, clause_words in enumerate(_clause_lengths(rng, sentence_words - 1)):
        if index > 0:
            conjunction = _choose(rng, CONJUNCTIONS)
            source.append(lexicon.source("conjunction", conjunction))
            target.append(lexicon.target("conjunction", conjunction))
        clause = _sample_clause(rng, _choose(rng, TEMPLATES_BY_LENGTH[clause_words]), lexicon.class_sizes)
        source += _source_clause(lexicon, clause)
        target += _target_clause(lexicon, clause)
    source.append(FULL_STOP)
    target.append(FULL_STOP)
    return " ".join(source), " ".join(target)


def check_arguments(n: int, min_words: int, max_words: int) -> None:
    """Raise ValueError, with a message for a person, if generate_pairs cannot honour these."""
    if n <= 0:
        raise ValueError(f"the number of pairs must be positive, got {n}")
    if min_words < MIN_SENTENCE_WORDS:
        raise ValueError(
            f"min_words must be at least {MIN_SENTENCE_WORDS} (one clause and '.'), got {min_words}"
        )
    if min_words > max_words:
        raise ValueError(f"min_words ({min_words}) must not exceed max_words ({max_words})")


def generate_pairs(
    n: int, seed: int, min_words: int, max_words: int, lexicon_seed: int = LEXICON_SEED,
    lexicon_size: str = "full",
) -> List[Tuple[str, str]]:
    """``n`` (source, target) sentences whose source length in tokens is uniform in [min_words, max_words]."""
    check_arguments(n, min_words, max_words)
    lexicon = build_lexicon(lexicon_seed, lexicon_size)
    rng = random.Random(seed)
    return [_generate_pair(rng, lexicon, min_words, max_words) for _ in range(n)]


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python scripts/lib/toy_corpus.py",
        description="Write a synthetic parallel corpus to PREFIX.SRC and PREFIX.TGT, one sentence "
        "per line: an SOV source and an SVO target with agreement, clauses chained by conjunctions, "
        "source lengths uniform in [MIN_WORDS, MAX_WORDS] tokens. The grammar is in the module "
        "docstring (python -m pydoc scripts/lib/toy_corpus.py).",
    )
    parser.add_argument("--out-prefix", required=True, help="output path without the language suffix")
    parser.add_argument("--n", type=int, required=True, help="number of sentence pairs")
    parser.add_argument("--seed", type=int, required=True, help="seed of the sentences")
    parser.add_argument("--min-words", type=int, required=True, help="shortest source sentence, in tokens")
    parser.add_argument("--max-words", type=int, required=True, help="longest source sentence, in tokens")
    parser.add_argument("--src-lang", default="src", help="suffix of the source file (default: src)")
    parser.add_argument("--tgt-lang", default="tgt", help="suffix of the target file (default: tgt)")
    parser.add_argument(
        "--lexicon-seed",
        type=int,
        default=LEXICON_SEED,
        help="seed of the invented vocabulary; keep it equal for sets that must share a language pair "
        f"(default: {LEXICON_SEED})",
    )
    parser.add_argument(
        "--lexicon-size", choices=sorted(LEXICON_SIZES), default="full",
        help="stems per word class: full (450 per language) or small (62, for tiny CPU models)",
    )
    args = parser.parse_args(argv)
    try:
        check_arguments(args.n, args.min_words, args.max_words)
    except ValueError as error:
        parser.error(str(error))
    if args.src_lang == args.tgt_lang:
        parser.error(f"--src-lang and --tgt-lang must differ, both are {args.src_lang!r}")

    pairs = generate_pairs(
        args.n, args.seed, args.min_words, args.max_words, args.lexicon_seed, args.lexicon_size
    )
    write_lines(
        [
            (f"{args.out_prefix}.{args.src_lang}", [source for source, _ in pairs]),
            (f"{args.out_prefix}.{args.tgt_lang}", [target for _, target in pairs]),
        ]
    )
    written = f"{args.out_prefix}.{{{args.src_lang},{args.tgt_lang}}}"
    print(f"wrote {len(pairs)} pairs to {written}", file=sys.stderr)


if __name__ == "__main__":
    main()
