"""The protected dataset: the committed seed.sql is the generator's output, and it is well formed."""

from __future__ import annotations

from collections import Counter

from arenac.substrate.spine.seed import CHANNELS, MESSAGES_PER_CHANNEL, USERS, chart_file, seed_messages, seed_sql


def test_committed_seed_matches_the_generator() -> None:
    # refresh: python -m arenac.substrate.spine.seed > library/substrates/spine/chart/files/seed.sql
    assert chart_file("seed.sql").read_text() == seed_sql()


def test_seed_is_deterministic_and_dense() -> None:
    assert seed_sql() == seed_sql()
    messages = seed_messages()
    assert len(USERS) == 20 and [name for name, _ in CHANNELS] == ["general", "random", "eng", "ops", "sales"]
    assert len(messages) == len(CHANNELS) * MESSAGES_PER_CHANNEL
    per_channel: dict[int, list[int]] = {}
    for message in messages:
        per_channel.setdefault(message.channel_id, []).append(message.seq)
        assert message.author in USERS
    for seqs in per_channel.values():
        assert sorted(seqs) == list(range(1, MESSAGES_PER_CHANNEL + 1))
    assert max(Counter(m.author for m in messages).values()) < len(messages) / 2
