"""Which language the summary is written in: the one the user writes in, for any language.

The prompts exist in Chinese (the seed's) and English; every other language gets the
English prompt plus an explicit instruction to answer in that language. Detection is
cheap on purpose: it reads a bounded sample of the newest user text (a few thousand
characters), so it costs the same at 10 or 100,000 messages, and it decides by script
(Han, kana, Hangul, Cyrillic, Arabic…) and, for Latin script, by common function words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from condense.types import Message

Language = str  # a BCP 47 primary language code: "zh", "en", "ru", "ja"…

LANGUAGE_NAMES: dict[str, str] = {
    "ar": "Arabic",
    "bn": "Bengali",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fa": "Persian",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hy": "Armenian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "ko": "Korean",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "ta": "Tamil",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh": "Chinese",
}

# The newest user text decides; this much is plenty to tell a script or a language.
SAMPLE_CHARS = 3_000
_PER_MESSAGE = 1_000

_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")
_LATIN_WORD = re.compile(r"[^\W\d_]+")
# Python's regex engine steps through a sample at about 40 ns a character; the ASCII
# letters are counted, and an ASCII sample split into words, with bytes.translate instead
_NON_LETTER_BYTES = bytes(b for b in range(128) if not chr(b).isalpha())
_NON_LETTERS_TO_SPACE = bytes.maketrans(_NON_LETTER_BYTES, b" " * len(_NON_LETTER_BYTES))

# Scripts counted in the sample's non-ASCII characters: what is left once every run of
# other characters is deleted (one C-speed pass each, no list of one-character matches).
_OTHER_THAN: dict[str, re.Pattern[str]] = {
    name: re.compile(f"[^{ranges}]+")
    for name, ranges in {
        "latin": "\u00c0-\u024f\u1e00-\u1eff",
        "greek": "\u0370-\u03ff",
        "cyrillic": "\u0400-\u052f",
        "armenian": "\u0530-\u058f",
        "hebrew": "\u0590-\u05ff",
        "arabic": "\u0600-\u06ff\u0750-\u077f",
        "devanagari": "\u0900-\u097f",
        "bengali": "\u0980-\u09ff",
        "tamil": "\u0b80-\u0bff",
        "thai": "\u0e00-\u0e7f",
        "georgian": "\u10a0-\u10ff",
        "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
        "kana": "\u3040-\u30ff",
        "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
    }.items()
}
_SCRIPT_LANGUAGE = {
    "greek": "el",
    "armenian": "hy",
    "hebrew": "he",
    "arabic": "ar",
    "devanagari": "hi",
    "bengali": "bn",
    "tamil": "ta",
    "thai": "th",
    "georgian": "ka",
}
_UKRAINIAN = frozenset("іїєґІЇЄҐ")
_PERSIAN = frozenset("پچژگ")
_VIETNAMESE = frozenset("ăâđêôơưĂÂĐÊÔƠƯạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")

# Function words that are frequent in one Latin-script language and rare in the others.
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and is are to of you it that this with for not what have".split()),
    "es": frozenset("el los las que por para una del con pero como está muy también".split()),
    "fr": frozenset("le les des est une pas que pour dans avec sur vous mais je".split()),
    "de": frozenset("der die das und ist nicht ich mit auf ein eine auch sie wie".split()),
    "pt": frozenset("não uma com para os você mas isso também muito são como".split()),
    "it": frozenset("il che di non per una sono con anche della questo come gli".split()),
    "nl": frozenset("het een niet ik dat van zijn voor met ook maar je wat".split()),
    "pl": frozenset("nie się że jest na jak ale to co czy tak dla mi".split()),
    "tr": frozenset("bir ve bu için ile da de ne çok değil ama gibi mi".split()),
    "id": frozenset("yang dan di ini itu dengan untuk tidak ada saya dari akan".split()),
}


def _sample(messages: Sequence[Message], role: str) -> str:
    """Up to SAMPLE_CHARS of ``role``'s newest text (summaries excluded), newest first."""
    parts: list[str] = []
    room = SAMPLE_CHARS
    for m in reversed(messages):
        if m.role != role or m.is_summary or not m.content:
            continue
        piece = m.content[: min(_PER_MESSAGE, room)]
        parts.append(piece)
        room -= len(piece)
        if room <= 0:
            break
    return "\n".join(parts)


def _count(script: str, text: str) -> int:
    """How many characters of ``text`` are of ``script``."""
    return len(_OTHER_THAN[script].sub("", text))


def _latin_language(sample: str) -> str:
    """English unless another language's function words clearly outnumber its own."""
    if sample.isascii():  # the same words as _LATIN_WORD finds: runs of A-Z and a-z
        found = sample.encode("ascii").translate(_NON_LETTERS_TO_SPACE).decode("ascii").split()
    else:
        found = _LATIN_WORD.findall(sample)
    words: Counter[str] = Counter()
    for word, count in Counter(found).items():
        words[word.lower()] += count
    if not words:
        return "en"
    # each language's few function words looked up in the sample's word counts (not every
    # word against every language: that was most of the cost of a detection)
    scores = {lang: sum(words[w] for w in stop if w in words) for lang, stop in _STOPWORDS.items()}
    best = max(scores, key=lambda lang: scores[lang])
    if best != "en" and scores[best] >= 3 and scores[best] > 1.5 * scores["en"]:
        return best
    return "en"


def _detect(sample: str) -> str | None:
    """The language of ``sample``, or None when it has no letters."""
    ascii_letters = len(sample.encode("ascii", "ignore").translate(None, _NON_LETTER_BYTES))
    if sample.isascii():
        return _latin_language(sample) if ascii_letters else None
    wide = _ASCII_RUNS.sub("", sample)
    # letters: ASCII ones and every character of a script (an upper bound, so the shares
    # below are never overstated); the East Asian scripts decide first
    letters = ascii_letters + len(wide)
    if not letters:
        return None
    found = _east_asian_language(wide, letters)
    if found is None:
        found = _script_language(wide, ascii_letters)
    return found if found is not None else _latin_language(sample)


def _east_asian_language(wide: str, letters: int) -> str | None:
    """Japanese, Korean or Chinese, when their script has its share of the letters."""
    if _count("kana", wide) >= 0.05 * letters:
        return "ja"
    if _count("hangul", wide) >= 0.10 * letters:
        return "ko"
    if _count("han", wide) >= 0.10 * letters:  # the seed's 10% rule
        return "zh"
    return None


def _script_language(wide: str, ascii_letters: int) -> str | None:
    """The language of the other script with 15% of the letters (told apart by its
    marks where two languages share it), or Vietnamese by its marks; None: Latin."""
    counts = {name: _count(name, wide) for name in _OTHER_THAN}
    letters = ascii_letters + sum(counts.values())
    marks = set(wide) & (_UKRAINIAN | _PERSIAN | _VIETNAMESE)
    others = {s: n for s, n in counts.items() if s not in ("latin", "kana", "han", "hangul")}
    if others:
        script = max(others, key=lambda s: others[s])
        if others[script] >= 0.15 * letters:
            return _language_of_script(script, marks)
    if marks & _VIETNAMESE and len(marks & _VIETNAMESE) >= 2:
        return "vi"
    return None


def _language_of_script(script: str, marks: set[str]) -> str:
    if script == "cyrillic":
        return "uk" if marks & _UKRAINIAN else "ru"
    if script == "arabic" and marks & _PERSIAN:
        return "fa"
    return _SCRIPT_LANGUAGE[script]


def detect_language(messages: Sequence[Message]) -> Language:
    """The language the user writes in (their newest words), else the assistant's, else en.

    The user's own words decide: assistants in Chinese or Russian conversations still
    write long stretches of English code.
    """
    for role in ("user", "assistant"):
        found = _detect(_sample(messages, role))
        if found is not None:
            return found
    return "en"


def language_name(language: Language) -> str:
    return LANGUAGE_NAMES.get(language, language)
