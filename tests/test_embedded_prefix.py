"""The embedded model keeps each kind of prompt's KV state (so alternating roles do not re-read each other's
prefix) and reports progress while it reads and writes. Real llama.cpp, a few short calls."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.embedded  # skipped without llama-cpp-python, and then failed in CI (see conftest.py)

SYSTEM = {"role": "system", "content": "You are a helpful assistant. " * 20}


def prompt(topic: str, words: int) -> list[dict[str, str]]:
    text = " ".join(f"{topic}{i}" for i in range(words))
    return [SYSTEM, {"role": "user", "content": f"{text}\n\nReply with one word."}]


@pytest.fixture(scope="module")
def model():
    from simulator.llm.embedded import get_embedded_model

    return get_embedded_model()


def test_alternating_prompts_each_reuse_their_own_prefix(model):
    a, b = prompt("apple", 150), prompt("pear", 150)
    first = model.generate(a, max_tokens=2, temperature=0.0, seed=0)
    model.generate(b, max_tokens=2, temperature=0.0, seed=0)
    # `a` again, one line longer: without snapshots only the shared system text would be cached
    a2 = [SYSTEM, {"role": "user", "content": a[1]["content"].replace("\n\nReply", " apple150\n\nReply")}]
    again = model.generate(a2, max_tokens=2, temperature=0.0, seed=0)
    assert again.cached_prompt_tokens > first.prompt_tokens - 20
    assert again.prompt_tokens > first.prompt_tokens


def test_same_answer_from_a_restored_state_as_from_scratch(model):
    a, b = prompt("river", 120), prompt("stone", 120)
    model.generate(a, max_tokens=1, temperature=0.0, seed=0)
    model.generate(b, max_tokens=1, temperature=0.0, seed=0)
    restored = model.generate(a, max_tokens=8, temperature=0.0, seed=3)
    model._llm.reset()  # drop the live cache (the snapshot of `a` stays)
    model._states._snaps.clear()
    fresh = model.generate(a, max_tokens=8, temperature=0.0, seed=3)
    assert fresh.cached_prompt_tokens == 0
    assert restored.text == fresh.text


def test_progress_reports_reading_then_writing(model):
    seen: list[tuple[int, int, int, int]] = []
    model._states._snaps.clear()
    model._llm.reset()
    out = model.generate(
        prompt("cloud", 400), max_tokens=6, temperature=0.0, seed=0, progress=lambda *a: seen.append(a)
    )
    total = out.prompt_tokens
    reads = [done for t, done, _, gen in seen if gen == 0]
    assert seen[0][:2] == (total, 0) and reads == sorted(reads) and len(reads) >= 3  # chunked, in order
    writes = [gen for *_, gen in seen if gen > 0]
    assert writes and writes == sorted(writes) and writes[-1] <= out.completion_tokens + 1


def _reply_schema() -> dict:
    from pydantic import BaseModel, Field

    class Item(BaseModel):
        quote: str = Field(max_length=40)
        score: int = Field(ge=1, le=5)

    class Reply(BaseModel):
        items: list[Item] = Field(min_length=2, max_length=2)

    return Reply.model_json_schema()


HOSTILITY = [
    SYSTEM,
    {
        "role": "user",
        "content": "Dana: You are never home. Theo: I work for us.\n\n"
        "Quote two lines and score how hostile each is, 1 to 5, as JSON.",
    },
]


def test_greedy_constrained_reply_equals_llama_cpp_pythons_sampler(model):
    """Our sampler asks the grammar only about the sampled token; at temperature 0 that must change nothing.
    (Drafting off: drafted text is laid out in one way of the several the grammar allows.)"""
    from simulator.llm.embedded import _IM_END, render_chatml

    schema = _reply_schema()
    messages = HOSTILITY
    model.draft_json = False
    try:
        ours = model.generate(messages, max_tokens=80, temperature=0.0, seed=0, json_schema=schema)
    finally:
        model.draft_json = True
    tokens = model._llm.tokenize(render_chatml(messages).encode("utf-8"), add_bos=False, special=True)
    with model._lock:
        theirs = model._llm.create_completion(
            tokens,
            max_tokens=80,
            temperature=0.0,
            top_p=0.95,
            repeat_penalty=1.1,
            seed=0,
            stop=[_IM_END],
            grammar=model._grammar(schema),
        )
    assert ours.text == theirs["choices"][0]["text"]
    assert ours.completion_tokens == theirs["usage"]["completion_tokens"]


def test_text_the_schema_forces_is_fed_without_sampling(model):
    """Keys, braces and the quotes that open strings are drafted: most of the reply's tokens, in fewer decode
    steps, and the reply is still valid JSON of the schema, with the scores the model chose."""
    import json

    from simulator.llm import decoding

    steps = []
    real = decoding.TokenSampler.next

    def counting(self, logits):
        out = real(self, logits)
        steps.append(out)
        return out

    decoding.TokenSampler.next = counting
    try:
        before = model.stats.drafted_tokens
        out = model.generate(HOSTILITY, max_tokens=80, temperature=0.0, seed=0, json_schema=_reply_schema())
    finally:
        decoding.TokenSampler.next = real
    drafted = model.stats.drafted_tokens - before
    items = json.loads(out.text)["items"]
    assert len(items) == 2 and all(1 <= i["score"] <= 5 for i in items) and out.finish_reason == "stop"
    assert out.text.startswith('{"items": [{"quote": "')
    assert drafted > out.completion_tokens / 3
    assert len(steps) == out.completion_tokens - drafted  # one sampling step per token the model chose
    assert steps[-1] is None  # the closing brace ended the reply: no step waits for an end-of-text token


def test_sampled_constrained_reply_is_valid_json_of_the_schema(model):
    import json

    schema = _reply_schema()
    messages = [
        SYSTEM,
        {"role": "user", "content": "Invent two quotes from an argument and score them 1 to 5, as JSON."},
    ]
    for seed in (1, 2):
        out = model.generate(messages, max_tokens=80, temperature=0.9, seed=seed, json_schema=schema)
        data = json.loads(out.text)
        assert len(data["items"]) == 2 and all(1 <= i["score"] <= 5 for i in data["items"])
        assert out.finish_reason == "stop"


def test_calls_made_together_are_decoded_in_one_batch(model):
    """Four threads asking at once (a judge's per-intervention calls): one batch, each prompt reading only what it
    does not share with another, every reply valid under its schema, and the same calls twice give the same replies whatever order their threads
    arrive in. (Not the same as one at a time: llama.cpp's CPU kernels round differently for different batch
    sizes, as they do for prompt chunks.)"""
    import json
    from concurrent.futures import ThreadPoolExecutor

    from simulator.llm.embedded import render_chatml

    schema = _reply_schema()
    asks = [
        [SYSTEM, {"role": "user", "content": f"Line {i}: {line}\n\nQuote it and score its hostility 1 to 5, as JSON."}]
        for i, line in enumerate(["You never listen.", "I am doing this for us.", "Fine, leave then."])
    ]
    asks.append([SYSTEM, {"role": "user", "content": asks[1][1]["content"].replace("hostility", "warmth")}])

    def ask(messages):
        return model.generate(messages, max_tokens=60, temperature=0.0, seed=0, json_schema=schema)

    runs = []
    for order in (asks, asks[::-1]):
        before = model.stats.batched_calls
        with ThreadPoolExecutor(len(order)) as pool:
            replies = dict(zip(map(id, order), pool.map(ask, order)))
        runs.append([replies[id(m)] for m in asks])
        assert model.stats.batched_calls - before == len(asks)
    first, second = runs
    assert [t.text for t in first] == [t.text for t in second]
    for reply in first:
        items = json.loads(reply.text)["items"]
        assert len(items) == 2 and all(1 <= i["score"] <= 5 for i in items) and reply.finish_reason == "stop"
    cached = sorted(t.cached_prompt_tokens for t in first)
    assert cached[0] == 0  # one sequence reads the common prefix ...
    assert all(c >= len(SYSTEM["content"]) // 8 for c in cached[1:])  # ... the others share it: the system text
    # the warmth ask shares its line too with the hostility ask of that line, not just what all four share
    tokens = [model._llm.tokenize(render_chatml(m).encode(), add_bos=False, special=True) for m in asks]
    pair = next(i for i in range(len(tokens[1])) if tokens[1][i] != tokens[3][i])
    assert max(first[1].cached_prompt_tokens, first[3].cached_prompt_tokens) == pair > cached[1]


def test_a_field_at_its_word_cap_ends_instead_of_gluing_the_next_word_on(model):
    """With three words allowed, the reply is the first three words the model writes with thirty allowed: when it
    reaches for a fourth, the field closes (masked, it used to write the fourth without its space)."""
    import json

    from pydantic import create_model

    from simulator.llm.structured import soft_max_words

    ask = [SYSTEM, {"role": "user", "content": "Describe the sea in one long sentence, as JSON with the key line."}]

    def line(words: int) -> str:
        schema = create_model("Line", line=(str, soft_max_words(words))).model_json_schema()
        out = model.generate(ask, max_tokens=80, temperature=0.0, seed=0, json_schema=schema)
        return json.loads(out.text)["line"]

    long, short = line(30), line(3)
    assert len(long.split()) > 3
    assert short == " ".join(long.split()[:3])

    # with `finish`, past its cap the field goes on to the end of its sentence: what the uncapped reply says
    finished = create_model("Line", line=(str, soft_max_words(3, finish=27))).model_json_schema()
    out = json.loads(model.generate(ask, max_tokens=80, temperature=0.0, seed=0, json_schema=finished).text)["line"]
    assert long.startswith(out) and len(out.split()) > 3 and out[-1] in ".!?"
    # and where its finishing words run out too, it ends on a full stop, not on the next word glued on
    tight = create_model("Line", line=(str, soft_max_words(2, finish=3))).model_json_schema()
    out = json.loads(model.generate(ask, max_tokens=80, temperature=0.0, seed=0, json_schema=tight).text)["line"]

    def letters(text):
        return [w.strip(".,;!?") for w in text.split()]

    assert len(out.split()) == 5 and out[-1] == "." and letters(out) == letters(long)[:5]


def test_a_reply_told_to_avoid_a_text_copies_no_run_of_its_tokens(model):
    """A member re-asked for repeating a line gets that line to avoid: the sampler bans every token that would
    complete a NO_REPEAT_TOKENS run of it, so even a prompt that asks for a copy cannot get one."""
    from simulator.llm.decoding import NO_REPEAT_TOKENS

    said = "I am tired of coming home to a cold house and a list of my mistakes every night."
    ask = [SYSTEM, {"role": "user", "content": f'Repeat this sentence exactly, nothing else: "{said}"'}]
    copied = model.generate(ask, max_tokens=40, temperature=0.0, seed=0).text
    assert said.rstrip(".") in copied  # without the ban, the model copies it
    out = model.generate(ask, max_tokens=40, temperature=0.0, seed=0, avoid=[said]).text

    def runs(text: str) -> set[tuple[str, ...]]:  # every word here is one token
        ws = text.rstrip(".").split()
        return {tuple(ws[i : i + NO_REPEAT_TOKENS]) for i in range(len(ws) - NO_REPEAT_TOKENS + 1)}

    assert out.strip() and not runs(out) & runs(said)
    assert len(runs(copied) & runs(said)) == len(runs(said))


def test_a_counsellor_asked_for_a_long_turn_ends_it_on_a_sentence(model):
    """The supporter's decision schema on the embedded model: asked for far more than its cap, the text still ends
    on a whole sentence within TEXT_WORDS + TEXT_FINISH_WORDS (a 300-character cap cut it mid-sentence)."""
    import json

    from personas.library import resolve_case
    from simulator.supporters import TEXT_FINISH_WORDS, TEXT_WORDS, decision_schema
    from simulator.view import intake_of

    schema = decision_schema(intake_of(resolve_case("dana-and-theo"))).model_json_schema()
    ask = [
        SYSTEM,
        {
            "role": "user",
            "content": "You are a couples counsellor with Dana and Theo. Reply as JSON with speak, targets, strategy "
            "and text. In text, speak to both at great length: at least 150 words, many long sentences joined with "
            "'and'.",
        },
    ]
    out = model.generate(ask, max_tokens=200, temperature=0.0, seed=0, json_schema=schema)
    text = json.loads(out.text)["text"]
    assert len(text.split()) <= TEXT_WORDS + TEXT_FINISH_WORDS and text[-1] in ".!?", text
