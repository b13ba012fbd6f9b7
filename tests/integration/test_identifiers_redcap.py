"""The subject identifier index fed from the local REDCap server through PyCap
(adapters.clinical.identifiers on RedcapSources): the demo subjects' synthetic identifier values are
read with the data dictionary, only the identifier fields are exported, and the firewall withholds
two subjects' names (Chinese and pinyin), a phone and a resident ID naming their subjects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources

import pytest
from pydantic import SecretStr

from agent_memory.adapters.clinical.identifiers import RedcapSubjectIdentifiers
from agent_memory.adapters.clinical.redcap import RedcapSources
from agent_memory.adapters.resolver import StaticResolver
from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.secrets import RedcapTokenSecret, SecretNaming
from agent_memory.identifiers import IdentifierFirewall
from infra.local.demo.redcap_project import DEMO_TOKEN, identifiers
from infra.local.redcap_server import LocalRedcap, demo_server
from tests.fakes import InMemorySecrets


@pytest.fixture(scope="module")
def server() -> Iterator[LocalRedcap]:
    with demo_server() as s:
        yield s


def _subjects() -> dict[str, int]:
    """Demo subject id -> age (the synthetic identifiers are derived from both)."""
    data = json.loads(resources.files("infra.local.demo").joinpath("clinical_data.json").read_text("utf-8"))
    return {sid: int(s.get("age") or 60) for sid, s in data["demo-iit"]["subjects"].items()}


def test_the_firewall_withholds_demo_subjects_identifiers_read_from_redcap(server: LocalRedcap) -> None:
    # Given: demo-iit's REDCap on the local server, read through PyCap
    # (its own token stored for its URL, read through the local runtime's egress policy)
    naming, secrets = SecretNaming(), InMemorySecrets()
    secrets.put(naming.redcap_token("demo-iit"),
                RedcapTokenSecret(token=SecretStr(DEMO_TOKEN), api_url=server.api_url).to_secret())
    sources = RedcapSources(secrets=secrets, naming=naming, egress=EgressPolicy(local_runtime=True),
                            resolver=StaticResolver())
    project = Project(project_id="demo-iit", name="Demo", created_at=datetime(2026, 1, 1, tzinfo=UTC),
                      clinical_data=ClinicalDataSource(source="redcap", api_url=server.api_url, token_set=True))
    reader = RedcapSubjectIdentifiers(sources)
    values = reader.subject_identifiers(project, deadline=None)
    ages = _subjects()
    first, third = identifiers(1, ages["P001"]), identifiers(3, ages["P003"])
    # Then: every subject's four identifier values are read, and nothing else
    assert {v.kind for v in values} == {"name", "resident_id", "phone", "email"}
    assert {v.subject_id for v in values} == set(ages)
    # When: a CRC types P001's and P003's names, P003's phone and P001's resident ID
    firewall = IdentifierFirewall(reader)
    text = (f"{first['subj_name']}和{third['subj_name']}下周复查，{third['subj_name']}家属电话 "
            f"{third['phone'][:3]}-{third['phone'][3:7]}-{third['phone'][7:]}，身份证 {first['resident_id']}")
    result = firewall.screen(project, text)
    # Then: none of them is left, each placeholder names its subject
    for value in (first["subj_name"], third["subj_name"], third["phone"][7:], first["resident_id"]):
        assert value not in result.text
    assert result.text == ("[P001 的姓名已隐去]和[P003 的姓名已隐去]下周复查，[P003 的姓名已隐去]家属电话 "
                           "[P003 的电话已隐去]，身份证 [P001 的身份证号已隐去]")
    assert result.counts == {"name": 3, "phone": 1, "resident_id": 1}
    # and in pinyin, in either order (the index made the pinyin of the Chinese value)
    assert first["subj_name"] == "王建国"
    assert firewall.screen(project, "JIANGUO WANG called about V3").text == "[P001's name withheld] called about V3"
