"""One-time codes: one alphabet without look-alikes, one shown form, and one reading of
what was typed, for pairing, web logins and /link alike."""

from __future__ import annotations

from thalos_bot.domain.codes import ALPHABET, code_hash, new_code, shown, typed


def test_a_code_has_none_of_the_characters_that_look_alike() -> None:
    assert not set("0O1IL") & set(ALPHABET)
    assert all(len(new_code(n)) == n and set(new_code(n)) <= set(ALPHABET) for n in (4, 8, 10))


def test_a_code_is_shown_in_two_halves_and_read_back_whatever_was_typed_around_it() -> None:
    assert shown("7KQ29XF4") == "7KQ2-9XF4"
    assert shown("ABCDEFGHJK") == "ABCDE-FGHJK"
    for variant in ("7kq2-9xf4", " 7KQ2 9XF4\n", "7KQ2.9XF4", "7KQ29XF4"):
        assert typed(variant) == "7KQ29XF4"
        assert code_hash(variant) == code_hash("7KQ29XF4")
    assert code_hash("7KQ2-9XF5") != code_hash("7KQ2-9XF4")
