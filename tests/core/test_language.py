"""Issue 13, cause 7: the summary is written in the conversation's language, any language.

Chinese conversations get the seed's Chinese prompts, everything else the English ones;
a language other than English also gets an explicit instruction to write in it. The
detection reads a bounded sample of the newest user text, so it costs the same at any size.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from condense import (
    COMPACTED,
    CompactionPolicy,
    Message,
    SummaryRequest,
    compress,
    detect_language,
    language_name,
)
from condense.language import SAMPLE_CHARS
from tests.core.cases import transcript_messages

TRANSCRIPTS = Path(__file__).parents[1] / "data" / "transcripts"

SAMPLES = {
    "ru": "Почему текст подставляется один и тот же? Думаю, ошибка в подсчёте.",
    "uk": "Чому текст підставляється один і той самий? Думаю, помилка в підрахунку.",
    "ja": "このパーサーは空行で失敗します。修正してください。",
    "ko": "파서가 빈 줄에서 실패합니다. 고쳐 주세요.",
    "zh": "解析器在空行上失败了，请帮我修复。",
    "ar": "المحلل يفشل في الأسطر الفارغة، من فضلك أصلحه.",
    "fa": "پارسر روی خط‌های خالی شکست می‌خورد، لطفاً درستش کن.",
    "he": "המנתח נכשל בשורות ריקות, בבקשה תקן אותו.",
    "el": "Ο αναλυτής αποτυγχάνει στις κενές γραμμές, διόρθωσέ τον.",
    "hi": "पार्सर खाली पंक्तियों पर विफल होता है, कृपया इसे ठीक करें।",
    "th": "ตัวแยกวิเคราะห์ล้มเหลวในบรรทัดว่าง โปรดแก้ไข",
    "es": "El analizador falla con las líneas vacías, ¿puedes arreglarlo para que no falle?",
    "fr": "Le parseur échoue sur les lignes vides, est-ce que vous pouvez le corriger pour moi?",
    "de": "Der Parser ist bei leeren Zeilen kaputt und das ist nicht gut, kannst du ihn reparieren?",
    "pt": "O analisador não funciona com linhas vazias, você pode corrigir isso para mim também?",
    "vi": "Trình phân tích bị lỗi với các dòng trống, bạn có thể sửa giúp tôi được không?",
    "en": "The parser fails on empty lines, can you fix it for me?",
}


def talk(user_text: str, *, assistant_text: str = "Let me check src/parser.py.") -> list[Message]:
    return [
        Message("system", "You are a coding agent.", id=1),
        *[
            Message("user" if i % 2 else "assistant", user_text if i % 2 else assistant_text, id=i)
            for i in range(2, 12)
        ],
    ]


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_the_users_language_is_detected(language: str) -> None:
    assert detect_language(talk(SAMPLES[language])) == language


def test_the_user_decides_even_when_the_assistant_writes_english_code() -> None:
    messages = talk(
        SAMPLES["ru"], assistant_text="def parse(line):\n    return line.split()\n" * 40
    )
    assert detect_language(messages) == "ru"


def test_the_russian_transcript_is_summarized_in_russian() -> None:
    """Transcript 014 (aider, a Russian user): English prompt plus the instruction."""
    raw = json.loads((TRANSCRIPTS / "014_aider-mozgoslav-ru.json").read_text(encoding="utf-8"))
    messages = transcript_messages(raw)
    requests: list[SummaryRequest] = []

    def summarize(request: SummaryRequest) -> str:
        requests.append(request)
        return "## Цель\n" + "- сохранённый факт\n" * min(40, request.target_tokens // 8)

    policy = CompactionPolicy(context_window=32_000, aux_context_window=32_000)
    result = compress(messages, policy, summarize, force=True)
    assert result.status == COMPACTED and result.language == "ru"
    for request in requests:
        assert request.language == "ru"
        assert "Write the summary in Russian, the language the user writes in" in request.prompt
        assert request.prompt.startswith(
            ("Create a structured", "Merge the partial", "You are updating")
        )


@pytest.mark.parametrize(("language", "template"), [("zh", "为后续助手"), ("en", "Create a")])
def test_chinese_and_english_keep_their_own_prompts(language: str, template: str) -> None:
    requests: list[SummaryRequest] = []

    def summarize(request: SummaryRequest) -> str:
        requests.append(request)
        return "## Goal\n" + "- kept\n" * 40

    messages = [*talk(SAMPLES[language] * 20), Message("assistant", "ok", id=50)]
    compress(messages, CompactionPolicy(context_window=100_000), summarize, force=True)
    assert requests and requests[0].prompt.startswith(template)
    assert "Write the summary in" not in requests[0].prompt
    assert language_name(language) in ("Chinese", "English")


def test_only_the_newest_user_text_is_read() -> None:
    """A Chinese history with a Russian user in its last few thousand characters is Russian:
    the sample is bounded, so the cost does not grow with the history."""
    old = [Message("user", SAMPLES["zh"] * 30, id=i) for i in range(1, 2_000)]
    new = [Message("user", SAMPLES["ru"] * 20, id=3_000 + i) for i in range(4)]
    assert sum(len(m.content) for m in new) > SAMPLE_CHARS
    assert detect_language([*old, *new]) == "ru"
    messages = [*old * 50, *new]  # 100k messages
    start = time.perf_counter()
    detect_language(messages)
    assert time.perf_counter() - start < 0.05, "a bounded sample: far under a millisecond here"
