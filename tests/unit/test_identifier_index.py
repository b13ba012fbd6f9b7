"""The subject identifier index (agent_memory.identifiers.index) and what feeds it: salted digests
only (no value retrievable from the object), names as whole names in Chinese and in pinyin /
English order, codes and addresses as typed with any separators, the subject of each match, and the
identifier fields read from the data dictionary (domain.clinical, adapters.clinical.identifiers)."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.adapters.clinical.identifiers import RedcapSubjectIdentifiers
from agent_memory.domain.clinical import (
    DataDictionary,
    FieldDef,
    IdentifierValue,
    identifier_kind,
    subject_identifier_values,
)
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.redaction import scrub
from agent_memory.identifiers.index import IdentifierIndex
from tests.fakes import InMemoryClinicalRecords

VALUES = [
    IdentifierValue("P001", "name", "王建国"),
    IdentifierValue("P001", "phone", "139-0001-7919"),
    IdentifierValue("P001", "address", "浙江省杭州市西湖区文三路88号3单元502室"),
    IdentifierValue("P004", "name", "刘桂兰"),
    IdentifierValue("P004", "record_number", "ZY20250417"),
    IdentifierValue("P006", "name", "欧阳丽娟"),
    IdentifierValue("P006", "phone", "+86 138 5710 4466"),
    IdentifierValue("P007", "name", "ZHANG Wei"),
    IdentifierValue("P009", "name", "Maria Schmidt"),
    IdentifierValue("P009", "email", "M.Schmidt@example.de"),
    IdentifierValue("P010", "name", "张伟"),
    IdentifierValue("P011", "resident_id", "110105197508151235"),
]


@pytest.fixture(scope="module")
def index() -> IdentifierIndex:
    return IdentifierIndex(VALUES)


def _found(index: IdentifierIndex, text: str) -> list[tuple[str, str, str | None]]:
    return [(text[s.start:s.end], s.kind, s.subject) for s in scrub(text, known=index.find).spans]


# ------------------------------------------------------------------------- salted digests only
def _forms(value: str) -> list[str]:
    """The value and the normalised forms the index hashes (what must never be readable)."""
    compact = "".join(c for c in value.lower() if c.isalnum())
    return [value, value.lower(), compact, compact[2:] if compact.startswith("86") else compact]


def test_no_identifier_value_can_be_read_from_the_index_object(index: IdentifierIndex) -> None:
    # Given: the index of the values above (pinyin forms included: "zhangwei", "wangjianguo")
    dumped = [repr(index), str(vars(index))]
    pickled = pickle.dumps(index)
    # Then: no value, no normalised form, no pinyin is in its repr, its attributes or its bytes
    for v in VALUES:
        for form in _forms(v.value):
            assert all(form not in d for d in dumped), form
            assert form.encode() not in pickled, form
    for pinyin in ("wangjianguo", "jianguowang", "ouyanglijuan", "zhangwei"):
        assert pinyin.encode() not in pickled and all(pinyin not in d for d in dumped)
    assert repr(index) == f"IdentifierIndex({len(index)} digests)"


def test_a_value_never_shows_in_the_repr_of_what_feeds_the_index() -> None:
    assert "王建国" not in repr(IdentifierValue("P001", "name", "王建国"))


def test_digests_depend_on_the_salt() -> None:
    # Given: two indexes of one value with different salts
    a = IdentifierIndex([IdentifierValue("P001", "name", "王建国")], salt=b"a" * 32)
    b = IdentifierIndex([IdentifierValue("P001", "name", "王建国")], salt=b"b" * 32)
    # Then: both find the name, and they share no digest (a digest is worthless without its salt)
    assert a.find("王建国来了") and b.find("王建国来了")
    assert not set(vars(a)["_digests"]) & set(vars(b)["_digests"])


# ------------------------------------------------------------------------------------- names
@pytest.mark.parametrize(("text", "span", "subject"), [
    ("王建国今天来做 C3D1", "王建国", "P001"),
    ("受试者王建国的家属说下周二不能来", "王建国", "P001"),
    ("欧阳丽娟的 CT 报告出来了", "欧阳丽娟", "P006"),
    ("张伟刚才说的是 P010 吗", "张伟", "P010"),
    ("Wang Jianguo's CT is scheduled", "Wang Jianguo", "P001"),
    ("Jianguo Wang did not bring his diary", "Jianguo Wang", "P001"),
    ("Jian-guo Wang's caregiver asked", "Jian-guo Wang", "P001"),
    ("Can you check whether LIU Guilan has AEs?", "LIU Guilan", "P004"),
    ("LIJUAN OUYANG - missing diary pages", "LIJUAN OUYANG", "P006"),
    ("Schmidt, Maria - screening labs drawn", "Schmidt, Maria", "P009"),
])
def test_names_match_in_chinese_and_in_pinyin_or_english_order(
    index: IdentifierIndex, text: str, span: str, subject: str
) -> None:
    assert _found(index, text) == [(span, "name", subject)]


def test_a_written_latin_name_names_its_subject_over_the_pinyin_of_another() -> None:
    # Given: P007 is written "ZHANG Wei"; the pinyin of P010's 张伟 is also zhang wei
    index = IdentifierIndex([IdentifierValue("P010", "name", "张伟"), IdentifierValue("P007", "name", "ZHANG Wei")])
    # Then: "Wei Zhang" is P007's name; 张伟 is P010's
    assert _found(index, "Wei Zhang reported nausea") == [("Wei Zhang", "name", "P007")]
    assert _found(index, "张伟这周三改期") == [("张伟", "name", "P010")]


def test_a_value_two_subjects_share_is_withheld_without_naming_either() -> None:
    index = IdentifierIndex([IdentifierValue("P002", "phone", "13900025838"),
                             IdentifierValue("P003", "phone", "13900025838")])
    assert _found(index, "随访电话 13900025838") == [("13900025838", "phone", None)]


@pytest.mark.parametrize("text", [
    "王建在另一个项目里",  # a prefix of a stored name is another name
    "建国门院区照常",  # a given name alone
    "Wang from the pharmacy; Zhang will sign",  # surnames alone
    "The monitor (Ms. Schmidt from the CRO)",
    "The CRA, Wei Li, will visit",
])
def test_name_parts_and_other_names_pass(index: IdentifierIndex, text: str) -> None:
    assert scrub(text, known=index.find).text == text


@pytest.mark.parametrize(("text", "found"), [
    ("张伟民医生是我们的影像评估医生", []),  # one more character, then a title: someone else's three-character name
    ("张伟民老师说", []),
    ("张伟医生说", [("张伟", "name", "P010")]),  # the name itself before a title
    ("张伟来了", [("张伟", "name", "P010")]),
    ("张伟明天来", [("张伟", "name", "P010")]),  # a character after it but no title: still the subject
])
def test_a_chinese_name_inside_a_longer_titled_name_is_not_the_subjects(
    index: IdentifierIndex, text: str, found: list[tuple[str, str, str]]
) -> None:
    # Chinese has no word boundaries; a title ends a name, so 张伟民医生 names a three-character name
    assert _found(index, text) == found


# -------------------------------------------------------------------- codes, addresses, e-mail
@pytest.mark.parametrize(("text", "span", "kind", "subject"), [
    ("电话 139 0001 7919 没人接", "139 0001 7919", "phone", "P001"),
    ("微信同手机号 +86 138-5710-4466", "+86 138-5710-4466", "phone", "P006"),
    ("住院号 ZY-2025-0417 出院", "ZY-2025-0417", "record_number", "P004"),
    ("Her e-mail is m.schmidt@example.de;", "m.schmidt@example.de", "email", "P009"),
    ("证号 110105197508151235 对上了", "110105197508151235", "resident_id", "P011"),
    ("寄到西湖区文三路 88 号 3 单元 502 室", "西湖区文三路 88 号 3 单元 502 室", "address", "P001"),
    ("地址是文三路88号3单元502室吗", "文三路88号3单元502室", "address", "P001"),
])
def test_codes_and_addresses_match_as_typed_with_their_subject(
    index: IdentifierIndex, text: str, span: str, kind: str, subject: str
) -> None:
    assert _found(index, text) == [(span, kind, subject)]


def test_a_code_inside_a_longer_run_of_digits_or_letters_is_not_matched(index: IdentifierIndex) -> None:
    assert index.find("样本 X13900017919 与 1390001791900") == []


def test_a_record_number_matched_by_the_index_needs_no_label(index: IdentifierIndex) -> None:
    assert _found(index, "ZY20250417 那位今天复查") == [("ZY20250417", "record_number", "P004")]


def test_values_too_short_to_be_told_apart_are_not_indexed() -> None:
    index = IdentifierIndex([IdentifierValue("P001", "record_number", "12345"),
                             IdentifierValue("P001", "identifier", "A1")])
    assert len(index) == 0 and index.find("12345 A1") == []


def test_text_with_a_character_that_decomposes_into_several_keeps_its_offsets(index: IdentifierIndex) -> None:
    text = "eGFR 52.3 ml/min/1.73㎡，王建国"
    assert _found(index, text) == [("王建国", "name", "P001")]


# ------------------------------------------------------------------- identifier fields (REDCap)
def _field(name: str, label: str, *, identifier: bool = True, validation: str = "", ftype: str = "text") -> FieldDef:
    return FieldDef(name=name, form="screening", field_type=ftype, label=label, validation=validation,
                    identifier=identifier)


@pytest.mark.parametrize(("f", "kind"), [
    (_field("subj_name", "姓名 Name"), "name"),
    (_field("last_name", "姓 Last name"), "surname"),
    (_field("first_name", "名 First name"), "given_name"),
    (_field("phone", "联系电话 Phone", validation="phone"), "phone"),
    (_field("contact", "Emergency contact mobile"), "phone"),
    (_field("email", "电子邮箱", validation="email"), "email"),
    (_field("resident_id", "身份证号 Resident ID"), "resident_id"),
    (_field("hosp_no", "住院号 Hospital number"), "record_number"),
    (_field("addr", "家庭住址"), "address"),
    (_field("wechat", "微信号 WeChat"), "identifier"),
    (_field("dob", "出生日期", validation="date_ymd"), None),  # dates are everywhere in clinical text
    (_field("age", "年龄", validation="integer"), None),
    (_field("sex", "性别", ftype="radio"), None),
    (_field("notes", "备注", identifier=False), None),
])
def test_identifier_fields_are_classified_by_validation_name_and_label(f: FieldDef, kind: str | None) -> None:
    assert identifier_kind(f) == kind


def test_split_name_fields_become_one_name_and_a_part_alone_is_dropped() -> None:
    # Given: a dictionary with surname / given-name fields and rows of two subjects
    dd = DataDictionary(fields=(
        _field("record_id", "Record", identifier=False), _field("last_name", "Last name"),
        _field("first_name", "First name"), _field("dob", "DOB", validation="date_ymd"),
    ))
    rows: list[dict[str, Any]] = [
        {"record_id": "P011", "last_name": "吴", "first_name": "明辉", "dob": "1966-01-02"},
        {"record_id": "P012", "last_name": "Schmidt", "first_name": "Maria"},
        {"record_id": "P013", "last_name": "Li", "first_name": ""},
        {"record_id": "P011", "last_name": "", "first_name": ""},  # a later event's row
    ]
    # When
    values = subject_identifier_values(dd, rows)
    # Then: one name per subject with both parts, no date, nothing for a surname alone
    assert [(v.subject_id, v.kind, v.value) for v in values] == [
        ("P011", "name", "吴明辉"), ("P012", "name", "Schmidt Maria")]


def test_the_redcap_adapter_exports_only_the_identifier_fields() -> None:
    # Given: a REDCap-shaped source with identifier and clinical fields
    meta = [
        {"field_name": "subject_id", "form_name": "screening", "field_type": "text", "field_label": "ID"},
        {"field_name": "subj_name", "form_name": "screening", "field_type": "text", "field_label": "姓名",
         "identifier": "y"},
        {"field_name": "phone", "form_name": "screening", "field_type": "text", "field_label": "Phone",
         "text_validation_type_or_show_slider_number": "phone", "identifier": "y"},
        {"field_name": "crcl", "form_name": "screening", "field_type": "text", "field_label": "CrCl",
         "text_validation_type_or_show_slider_number": "number"},
    ]
    records = InMemoryClinicalRecords(meta, [{"subject_id": "P001", "subj_name": "王建国", "phone": "13900017919",
                                              "crcl": "78", "redcap_event_name": "screening_arm_1"}])

    class Sources:
        opened: list[tuple[ClinicalDataSource, str, float | None]] = []

        def open(self, source: ClinicalDataSource, *, project_id: str,
                 deadline: float | None) -> InMemoryClinicalRecords:
            self.opened.append((source, project_id, deadline))
            return records

    sources = Sources()
    source = ClinicalDataSource(source="redcap", api_url="https://redcap.example.org/api/", token_set=True)
    project = Project(project_id="p", name="P", clinical_data=source, created_at=datetime(2026, 3, 1, tzinfo=UTC))
    # When
    values = RedcapSubjectIdentifiers(sources).subject_identifiers(project, deadline=12.5)
    # Then: one export, of the identifier fields only, within the deadline
    assert records.exports == [(None, ("subj_name", "phone"))]
    assert sources.opened == [(source, "p", 12.5)]
    assert {(v.kind, v.value) for v in values} == {("name", "王建国"), ("phone", "13900017919")}
    # and a project without a clinical source reads nothing
    bare = project.model_copy(update={"clinical_data": None})
    assert RedcapSubjectIdentifiers(sources).subject_identifiers(bare, deadline=None) == []
