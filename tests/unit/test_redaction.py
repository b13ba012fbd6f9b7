"""Identifier scrubbing of free text (agent_memory.domain.redaction)."""

from __future__ import annotations

import random

from agent_memory.domain.redaction import PLACEHOLDER, is_resident_id, resident_id_check_char, scrub_text


def _id(first17: str) -> str:
    return first17 + resident_id_check_char(first17)


def test_the_check_character_of_the_standard_example_is_x() -> None:
    # GB 11643-1999's worked example 11010519491231002X
    assert resident_id_check_char("11010519491231002") == "X"
    assert is_resident_id("11010519491231002X") and is_resident_id("11010519491231002x")
    assert not is_resident_id("110105194912310021")


def test_each_kind_is_replaced_and_counted() -> None:
    rid = _id("33010619800307011")
    text = (f"身份证 {rid}；手机 139 1234 5678、+86 13800001111；座机 010-62345678、(0571)88886666 转 123；"
            "邮箱 li.ming+iit@hospital.example.cn")
    clean, counts = scrub_text(text)
    assert dict(counts) == {"resident_id": 1, "phone": 4, "email": 1}
    for secret in (rid, "139 1234 5678", "13800001111", "62345678", "88886666", "li.ming"):
        assert secret not in clean
    assert clean.startswith(f"身份证 {PLACEHOLDER['resident_id']}；手机 {PLACEHOLDER['phone']}")


def test_dates_measurements_and_ids_with_a_wrong_check_character_stay() -> None:
    wrong = _id("33010619800307011")[:-1] + ("0" if _id("33010619800307011")[-1] != "0" else "1")
    text = f"访视 2026-02-05，体重 61.5 kg，CrCl 45 mL/min，编号 P001，样本号 {wrong}，剂量 400 mg"
    clean, counts = scrub_text(text)
    assert clean == text and not counts


def test_every_valid_resident_id_is_withheld_inside_text() -> None:
    rng = random.Random(11643)
    for _ in range(500):
        rid = _id(str(rng.randrange(10**16, 10**17)))
        clean, counts = scrub_text(f"患者证件号{rid}，已核对")
        assert rid not in clean and counts["resident_id"] == 1, rid
