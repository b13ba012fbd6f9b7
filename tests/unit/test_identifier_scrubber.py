"""The identifier scrubber (agent_memory.domain.redaction, identifier_patterns): each kind and its
surface forms in Chinese and English, the look-alikes that pass verbatim, the placeholders in the
text's language, counts and spans (never values), and how overlapping spans merge."""

from __future__ import annotations

import pytest

from agent_memory.domain.identifier_patterns import Withheld, fold_width, plausible_date, resident_id_shape
from agent_memory.domain.redaction import merge_spans, placeholder, scrub, scrub_text, text_language

# GB 11643-valid numbers (check characters computed by the standard's weights).
VALID_ID = "110105197508151235"
VALID_ID_X = "44030519880229456X"
WRONG_CHECK_ID = "110105197508151239"
OLD_ID = "110105750815123"


def _withheld(text: str) -> list[tuple[str, str]]:
    """(span text, kind) of each withheld span."""
    return [(text[s.start:s.end], s.kind) for s in scrub(text).spans]


# ------------------------------------------------------------------------------ resident IDs
@pytest.mark.parametrize("number", [
    VALID_ID, VALID_ID_X, VALID_ID_X.lower(), WRONG_CHECK_ID, OLD_ID,
    "110105 19750815 1235", "110105-19750815-1235", "1101 0519 7508 1512 35",
])
def test_resident_ids_in_every_form_are_withheld_in_chinese_text(number: str) -> None:
    # Given: a resident ID with or without a valid check character, old or new, grouped or not
    text = f"患者证件号{number}，已核对"
    # When / Then: exactly the number is withheld, as a resident ID
    assert _withheld(text) == [(number, "resident_id")]
    assert scrub(text).text == "患者证件号[身份证号已隐去]，已核对"


@pytest.mark.parametrize("number", [
    "123456789012345678",  # province 12 but no date at digits 7-14
    "202603091234567890",  # no province 20
    "862034056789012",  # a 15-digit serial: no province 86
    "330100123456789",  # 15 digits, 12-34-56 is no date
])
def test_long_numbers_without_a_plausible_birth_date_or_province_pass(number: str) -> None:
    text = f"编码 {number} 已登记"
    assert scrub(text).text == text


def test_eighteen_digits_typed_one_by_one_are_no_resident_id() -> None:
    # Given: scores listed with spaces (province 11, "date" 1111-11-11 once joined)
    text = "ECOG 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"
    # Then: an ID is typed in groups of 2 or more, never digit by digit
    assert scrub(text).text == text


def test_an_id_with_a_valid_check_character_is_withheld_even_after_a_sample_label() -> None:
    # Given: a sample label, which blocks IDs without a valid check character
    assert scrub(f"样本号 {WRONG_CHECK_ID}").counts == {}
    # Then: a checked ID is withheld whatever precedes it
    assert scrub(f"样本号 {VALID_ID}").counts == {"resident_id": 1}


def test_birth_dates_are_checked_as_calendar_dates() -> None:
    assert plausible_date(2000, 2, 29) and not plausible_date(1900, 2, 29) and not plausible_date(1999, 2, 29)
    assert resident_id_shape("110105190002290012") is None  # 1900-02-29 does not exist
    assert resident_id_shape(VALID_ID) == "checked" and resident_id_shape(WRONG_CHECK_ID) == "plausible"


# -------------------------------------------------------------------------------------- phones
@pytest.mark.parametrize(("text", "span"), [
    ("P012的家属电话是 13912345678，下次提醒", "13912345678"),
    ("家属电话13912345678，白天打不通", "13912345678"),
    ("手机 139 1234 5678 本人", "139 1234 5678"),
    ("号码 +86 138-0013-8000 在上海", "+86 138-0013-8000"),
    ("联系人 0086 13700001234（女儿）", "0086 13700001234"),
    ("新号 86-150-6789-1234，旧号停机", "86-150-6789-1234"),
    ("手机号136.5432.1098是本人", "136.5432.1098"),
    ("Reach the caregiver on (+86)13700001234 if needed", "(+86)13700001234"),
    ("tel.13912345678 ok", "13912345678"),
    ("科室座机 010-62345678，有事打", "010-62345678"),
    ("家里电话(021) 6234 5678，白天没人", "(021) 6234 5678"),
    ("单位电话 0755-2345678 转 8021", "0755-2345678 转 8021"),
    ("Home phone +86 10 6234 5678, ask for Mrs. Li.", "+86 10 6234 5678"),
    ("Office line 020 8765 4321 ext. 305, pharmacy", "020 8765 4321 ext. 305"),
    ("Desk: +86 (571) 8765 4321, Mon-Fri.", "+86 (571) 8765 4321"),
    ("回访电话：0571－87654321，找护士长", "0571－87654321"),
])
def test_mobiles_and_landlines_are_withheld_with_their_prefix_and_extension(text: str, span: str) -> None:
    assert _withheld(text) == [(span, "phone")]


def test_two_phones_in_one_run_are_two_spans() -> None:
    text = "两个号码 13812345678 15988887777 都可以"
    assert _withheld(text) == [("13812345678", "phone"), ("15988887777", "phone")]


@pytest.mark.parametrize(("text", "withheld"), [
    ("座机 62345678（没有区号）", True),  # a phone label in the clause: a local number is a phone
    ("家属留的电话：8888 6666，本地号码", True),
    ("采血日期 62345678 份", False),  # no phone label
    ("电话随访时间 20260312，请准备问卷", False),  # a phone label, but a YYYYMMDD date
    ("电话随访 2026-03-09 已完成", False),
])
def test_a_number_without_area_code_is_a_phone_only_after_a_phone_label_and_never_a_date(
    text: str, withheld: bool
) -> None:
    assert bool(scrub(text).counts) is withheld


@pytest.mark.parametrize("text", [
    "标本条码 15031800123，PK 第 4 个时间点",
    "Lab accession number 13800012345 is the repeat sample.",
    "样本号 13512345678 溶血了",
    "Lot 1391234 and lot 1391235 are both released",
    "快递单号 SF1391234567890，预计明天到",
    "Shipment tracking 7712 3456 7890 attached",
])
def test_an_eleven_digit_or_long_number_named_as_a_sample_lot_or_shipment_is_no_phone(text: str) -> None:
    assert scrub(text).text == text


# -------------------------------------------------------------------------------------- e-mail
@pytest.mark.parametrize(("text", "span"), [
    ("邮箱 wangli1985@163.com，检查报告", "wangli1985@163.com"),
    ("email: li_na+iit@hospital.example.cn please", "li_na+iit@hospital.example.cn"),
    ("邮箱：chenhaitao1970＠163.com（全角）", "chenhaitao1970＠163.com"),
    ("cc (JOHN.DOE@EXAMPLE.COM) on it", "JOHN.DOE@EXAMPLE.COM"),
])
def test_email_addresses_are_withheld_whole(text: str, span: str) -> None:
    assert _withheld(text) == [(span, "email")]


def test_a_distribution_list_fragment_is_no_email() -> None:
    text = "send it to crc-team@ (distribution list)"
    assert scrub(text).text == text


# ----------------------------------------------------------------------------- labelled values
@pytest.mark.parametrize(("text", "span", "kind"), [
    ("住院号：ZY20250417，上周出院", "ZY20250417", "record_number"),
    ("住院号 20250388 的那位", "20250388", "record_number"),
    ("病案号是A1234567，借阅要签字", "A1234567", "record_number"),
    ("病历号为 0012345678，门诊能查", "0012345678", "record_number"),
    ("MRN: H-2025-004471, please pull it", "H-2025-004471", "record_number"),
    ("P009 的 MRN#4471203 查不到", "4471203", "record_number"),
    ("MRN号 00987654 帮我查", "00987654", "record_number"),
    ("门诊号 MZ2026030915，今天挂的号", "MZ2026030915", "record_number"),
    ("住院号２０２５０３０１，全角数字", "２０２５０３０１", "record_number"),
    ("医保号 1100 2233 4455 66，异地备案", "1100 2233 4455 66", "insurance_number"),
    ("社保卡号 M12345678 已复印", "M12345678", "insurance_number"),
    # an English label ends in a number word or in the document's noun (ID, card)
    ("Hospital ID 88123456 is on the wristband photo", "88123456", "record_number"),
    ("Chart number 5566778 on the requisition", "5566778", "record_number"),
    ("Clinic no. MZ2026031501 - nephrology", "MZ2026031501", "record_number"),
    ("medical record ID: A0098712", "A0098712", "record_number"),
    ("Insurance card 1234567890123 for the claim", "1234567890123", "insurance_number"),
    ("Health insurance ID 330100123456789 expired", "330100123456789", "insurance_number"),
    ("Social security card number: K33010619610302", "K33010619610302", "insurance_number"),
    ("护照号：E12345678，外籍", "E12345678", "passport"),
    ("Passport no. G98765432 - flying back", "G98765432", "passport"),
    ("家属用港澳通行证 C12345678 登记", "C12345678", "passport"),
    ("身份证后四位 0229，确认本人", "0229", "resident_id"),
    ("受试者身份证号 330106********0010，打码了", "330106********0010", "resident_id"),
])
def test_values_after_a_label_are_withheld_and_the_label_kept(text: str, span: str, kind: str) -> None:
    result = scrub(text)
    assert _withheld(text) == [(span, kind)]
    assert span not in result.text


@pytest.mark.parametrize("text", [
    "住院号还没拿到，出院后再补",
    "MRN not available yet",
    "医保类型：职工医保，自费 1,380 元",
    "护照过期了，下个月续签",
    "身份证复印件在 ISF 第 3 册",
    "身份证号开头是 3301 的那位",
    "Subject ID No. 0032 randomised to arm B",  # "ID No." heads study ids too: only a whole ID counts
    "病历号：P003",
    "Patient ID P003 completed C3D1",
    "SAE case no. 2026-0012 sent within 24 h",
    "Hospital ID badges for the new CRCs arrive on 2026-04-01",
])
def test_a_label_without_a_number_of_its_shape_withholds_nothing(text: str) -> None:
    assert scrub(text).text == text


# ------------------------------------------------------------------------------- look-alikes
@pytest.mark.parametrize("text", [
    "P003 的 C3D1 访视定在 2026-03-09 上午，S-012 筛选失败",
    "肌酐 132 μmol/L，血压 132/86 mmHg，eGFR 45 mL/min/1.73m2",
    "WBC 12.3×10^9/L, PLT 213×10^9/L on C2D1",
    "Registered as NCT01234567 and ChiCTR2300071234, protocol v3.1",
    "入组码 IIT-2025-017-0032 对应 P032，随机号 R-0032",
    "研究药物批号 2503017，Kit KT-20250311-002，Batch 20250311A",
    "本周（2026-W12）新入组 3 例，累计 138 例，2026年3月9日 14:30",
    "本月检查费合计 13,912.50 元，CNY 1,391,200",
    "采血日期 20260309，2026/03/09 10:30，2026.03.09",
    "ISBN 978-7-117-28765-4，EDC 版本 6.2.13，邮编 310012",
    "Randomisation code 20250311-0032; query 2026-0309-0142",
    "会议号 813 4567 2290，分机 8021",
    "2026-03-09T01:40:00+08:00, 150 min",
])
def test_clinical_values_and_codes_pass_verbatim(text: str) -> None:
    assert scrub(text).text == text


# ------------------------------------------------------------------------------ placeholders
def test_placeholders_are_in_the_language_of_the_text() -> None:
    assert scrub("家属电话 13912345678").text == "家属电话 [电话已隐去]"
    assert scrub("Call the son at 13912345678 today").text == "Call the son at [phone number withheld] today"
    # code-switched chat with more CJK characters than Latin words counts as Chinese
    assert text_language("P012 的 phone 改成新号了，REDCap 更新一下") == "zh"


def test_a_subjects_placeholder_names_the_subject_in_both_languages() -> None:
    assert placeholder("name", "zh", "P004") == "[P004 的姓名已隐去]"
    assert placeholder("name", "en", "P004") == "[P004's name withheld]"
    assert placeholder("record_number", "zh") == "[病历号已隐去]"
    assert placeholder("email", "en") == "[e-mail withheld]"


def test_counts_and_spans_carry_kinds_and_offsets_never_values() -> None:
    text = f"身份证 {VALID_ID}；手机 139 1234 5678、+86 13800001111；邮箱 li.ming@hospital.example.cn"
    result = scrub(text)
    assert result.counts == {"email": 1, "phone": 2, "resident_id": 1}
    assert result.kinds == ("email", "phone", "resident_id")
    assert [text[s.start:s.end] for s in result.spans] == [
        VALID_ID, "139 1234 5678", "+86 13800001111", "li.ming@hospital.example.cn"]
    assert VALID_ID not in repr(result.counts) and "13800001111" not in result.text


def test_tool_results_keep_the_english_placeholders_and_counter() -> None:
    # Given: a REDCap free-text value in Chinese
    clean, counts = scrub_text("紧急联系人电话 139 0001 7919")
    # Then: tool results get the English markers the clinical tools have always sent
    assert clean == "紧急联系人电话 [phone number withheld]" and counts["phone"] == 1


def test_full_width_text_is_folded_one_character_for_one() -> None:
    text = "ＭＲＮ：１２３４５６７８　ｏｋ"
    assert len(fold_width(text)) == len(text) and fold_width(text) == "MRN:12345678 ok"
    assert _withheld(text) == [("１２３４５６７８", "record_number")]


# ------------------------------------------------------------------------------------ merging
def test_overlapping_spans_merge_with_the_covering_kind_and_the_subject_of_that_kind() -> None:
    # Given: a pattern phone with its +86, an index phone inside it, a name inside an e-mail
    phone = Withheld(0, 17, "phone", None, 0)
    subject_phone = Withheld(4, 17, "phone", "P006", 3)
    email = Withheld(20, 40, "email", None, 0)
    name_in_email = Withheld(20, 29, "name", "P007", 3)
    # When
    merged = merge_spans([subject_phone, email, phone, name_in_email])
    # Then: the +86 widening keeps P006; the e-mail stays an e-mail (no subject of its kind)
    assert merged == [Withheld(0, 17, "phone", "P006", 3), Withheld(20, 40, "email", None, 3)]


def test_a_checked_resident_id_after_an_insurance_label_is_a_resident_id() -> None:
    assert _withheld(f"社保卡号为{VALID_ID}") == [(VALID_ID, "resident_id")]


def test_text_without_identifiers_is_returned_as_it_is() -> None:
    result = scrub("P001 入组了吗？")
    assert result.text == "P001 入组了吗？" and not result.found and result.counts == {}
