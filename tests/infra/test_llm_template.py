"""The LLM's infrastructure: current default models (checked against the installed SDK's list of
deprecated models), the provider's parameters and environment, least-privilege grants per
provider (the API key's secret, or bedrock:InvokeModel on the configured models only) and the
admin alarms on LLMModelNotFound, LLMAuthError and the LLMFallback rate.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
import typing
from collections.abc import Iterable
from typing import Any

import pytest
from anthropic.resources.messages.messages import DEPRECATED_MODELS
from anthropic.types import Model

from infra.template_model import REPO_ROOT, function_specs, load_template, parameter_defaults
from tests.infra.test_template import _as_list, _conditional_statements

TABLES = ["FlowLogTable", "MemoryTable", "SessionsTable", "IdempotencyTable"]
#: A Claude model id as written in docs and configuration (Anthropic API or Bedrock form).
_MODEL_ID = re.compile(r"(?<![\w.-])(?:[a-z]{2,6}\.)?(?:anthropic\.)?claude-[a-z0-9][a-z0-9.-]*(?::\d+)?")
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")


# ------------------------------------------------------------------------------------ the guard
def bare_model_id(model_id: str) -> str:
    """The Anthropic API id of ``model_id``: a Bedrock id loses its ``[region.]anthropic.`` prefix and
    ``-v1:0`` suffix (``eu.anthropic.claude-sonnet-4-5-20250929-v1:0`` -> ``claude-sonnet-4-5-20250929``)."""
    return _BEDROCK_VERSION.sub("", _BEDROCK_PREFIX.sub("", model_id.strip()))


def deprecated_model_ids(model_ids: Iterable[str]) -> list[str]:
    """The ids among ``model_ids`` that the installed ``anthropic`` SDK lists in ``DEPRECATED_MODELS``
    (deprecated or retired: a retired id answers 404 and every LLM call fails)."""
    return [m for m in model_ids if bare_model_id(m) in DEPRECATED_MODELS]


def _template_default_model_ids() -> dict[str, str]:
    parameters = load_template()["Parameters"]
    return {f"template {name}": str(p["Default"]) for name, p in parameters.items() if name.endswith("ModelId")}


def _config_default_model_ids() -> dict[str, str]:
    from agent_memory import config
    from agent_memory.chat.turn import ChatConfig
    from agent_memory.jobs.deps import JobCaps

    found = {f"config {name}": str(value) for name, value in vars(config).items()
             if name.startswith("DEFAULT_") and name.endswith("MODEL_ID")}
    for name, info in config.Settings.model_fields.items():
        if name.endswith("model_id"):
            found[f"Settings.{name}"] = str(info.default)
    for cls in (ChatConfig, JobCaps):
        for f in dataclasses.fields(cls):
            if f.name.endswith("model_id"):
                found[f"{cls.__name__}.{f.name}"] = str(f.default)
    return found


def _documented_model_ids() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in ("README.md", "samconfig.toml"):
        text = (REPO_ROOT / path).read_text(encoding="utf-8")
        for match in _MODEL_ID.finditer(text):
            found[f"{path}: {match.group(0)}"] = match.group(0)
    return found


def test_guard_flags_claude_sonnet_4_5_in_every_form() -> None:
    # Given the model that was the default chat model until its retirement (2026-11-30),
    assert "claude-sonnet-4-5" in DEPRECATED_MODELS
    # When the guard checks it (Anthropic and Bedrock spellings), Then it is flagged each time.
    ids = ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    assert deprecated_model_ids(ids) == ids


def test_guard_passes_the_new_defaults_which_the_sdk_lists_as_current() -> None:
    current = set(typing.get_args(typing.get_args(Model)[0]))
    for model_id in ("claude-sonnet-5-5", "claude-haiku-5-5"):
        assert model_id in current
    assert deprecated_model_ids(["claude-sonnet-5-5", "claude-haiku-5-5", "anthropic.claude-sonnet-5-5",
                                 "global.anthropic.claude-haiku-5-5"]) == []


def test_no_default_model_id_is_deprecated() -> None:
    # Given every default model id: template parameters, config defaults (Settings and the dataclasses
    # built from it), README and samconfig,
    defaults = {**_template_default_model_ids(), **_config_default_model_ids(), **_documented_model_ids()}
    assert defaults["template ChatModelId"] == "claude-sonnet-5-5"
    assert defaults["template FastModelId"] == "claude-haiku-5-5"
    assert defaults["Settings.chat_model_id"] == "claude-sonnet-5-5"
    assert defaults["Settings.fast_model_id"] == "claude-haiku-5-5"
    assert any(where.startswith("README.md") for where in defaults)
    # Then none is in the installed SDK's DEPRECATED_MODELS.
    stale = {where: model_id for where, model_id in defaults.items() if deprecated_model_ids([model_id])}
    assert stale == {}, f"deprecated model ids: {stale}"


# ------------------------------------------------------------------------------------ parameters
@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    return dict(template["Resources"])


def test_provider_conditions_follow_the_llm_provider_parameter(template: dict[str, Any]) -> None:
    assert template["Conditions"]["UsesBedrock"] == {"Fn::Equals": [{"Ref": "LlmProvider"}, "bedrock"]}
    assert template["Conditions"]["UsesAnthropicApi"] == {"Fn::Equals": [{"Ref": "LlmProvider"}, "anthropic"]}


def test_bedrock_model_parameters_accept_model_and_inference_profile_ids(template: dict[str, Any]) -> None:
    for name, default in (("BedrockChatModelId", "anthropic.claude-sonnet-5-5"),
                          ("BedrockFastModelId", "anthropic.claude-haiku-5-5")):
        parameter = template["Parameters"][name]
        assert parameter["Default"] == default
        pattern = re.compile(parameter["AllowedPattern"])
        for accepted in (default, "eu.anthropic.claude-sonnet-5-5", "global.anthropic.claude-haiku-5-5",
                         "anthropic.claude-haiku-4-5-20251001-v1:0"):
            assert pattern.fullmatch(accepted), accepted
        assert not pattern.fullmatch("claude-sonnet-5-5")  # the Anthropic API id is not a Bedrock id


def _environment(template: dict[str, Any], **parameter_defaults: str) -> dict[str, str]:
    changed = {**template, "Parameters": {k: dict(v) for k, v in template["Parameters"].items()}}
    for name, value in parameter_defaults.items():
        changed["Parameters"][name]["Default"] = value
    (chat,) = [s for s in function_specs(changed, {t: t for t in TABLES}) if s.logical_id == "ChatFunction"]
    return chat.environment


def test_functions_get_the_model_ids_of_their_provider(template: dict[str, Any]) -> None:
    anthropic_env = _environment(template)
    assert (anthropic_env["LLM_PROVIDER"], anthropic_env["CHAT_MODEL_ID"], anthropic_env["FAST_MODEL_ID"]) == (
        "anthropic", "claude-sonnet-5-5", "claude-haiku-5-5")
    bedrock_env = _environment(template, LlmProvider="bedrock", BedrockChatModelId="eu.anthropic.claude-sonnet-5-5")
    assert (bedrock_env["LLM_PROVIDER"], bedrock_env["CHAT_MODEL_ID"], bedrock_env["FAST_MODEL_ID"]) == (
        "bedrock", "eu.anthropic.claude-sonnet-5-5", "anthropic.claude-haiku-5-5")


def test_llm_settings_from_the_template_defaults(template: dict[str, Any]) -> None:
    # Given the chat function's environment with the template defaults, When the settings read it,
    from agent_memory.config import Settings

    settings = Settings.model_validate(_environment(template))
    # Then the output cap leaves room for thinking, the key is re-read every 5 minutes, and each task
    # has its effort.
    assert settings.llm_max_output_tokens == 8192
    assert settings.anthropic_secret_max_age_s == 300
    assert (settings.llm_effort_chat, settings.llm_effort_intent, settings.llm_effort_symptoms) == (
        "medium", "low", "low")
    assert (settings.llm_effort_summary, settings.llm_effort_distill, settings.llm_effort_archive,
            settings.llm_effort_compact) == ("low", "medium", "medium", "low")
    # and an empty effort parameter means the model's own default.
    assert Settings.model_validate(_environment(template, LlmEffortChat="")).llm_effort_chat is None


def test_effort_parameters_offer_exactly_the_api_values(template: dict[str, Any]) -> None:
    from agent_memory.config import EffortSetting

    efforts = [name for name in template["Parameters"] if name.startswith("LlmEffort")]
    assert sorted(efforts) == sorted(["LlmEffortChat", "LlmEffortIntent", "LlmEffortSymptoms", "LlmEffortSummary",
                                      "LlmEffortDistill", "LlmEffortArchive", "LlmEffortCompact"])
    for name in efforts:
        assert template["Parameters"][name]["AllowedValues"] == ["", *typing.get_args(EffortSetting)], name


def test_the_intent_and_symptom_efforts_apply_only_where_the_model_decides(template: dict[str, Any]) -> None:
    from agent_memory.config import Settings

    # By default the rules read intents and symptoms: their effort parameters have no reader
    default = Settings.model_validate(_environment(template))
    assert (default.intent_classifier, default.symptom_extractor) == ("rules", "rules")
    # and the template's switches hand them to the fast model, with the effort it is given
    llm = Settings.model_validate(_environment(template, IntentClassifier="llm", SymptomExtractor="llm",
                                               LlmEffortIntent="medium"))
    assert (llm.intent_classifier, llm.symptom_extractor, llm.llm_effort_intent) == ("llm", "llm", "medium")


# ---------------------------------------------------------------------------------------- grants
def _resolve_bedrock_arn(resource: Any, parameters: dict[str, str]) -> str:
    """The ARN a Bedrock resource of the template names, for the given parameter values (``Fn::Sub`` with
    ``Fn::Select [1, Fn::Split ["anthropic.", Ref]]``, as in the template)."""
    if isinstance(resource, dict) and isinstance(resource.get("Fn::Sub"), list):
        text, variables = resource["Fn::Sub"]
        for name, value in variables.items():
            index, split = value["Fn::Select"]
            separator, ref = split["Fn::Split"]
            text = text.replace("${" + name + "}", parameters[ref["Ref"]].split(separator)[index])
    else:
        text = resource["Fn::Sub"]
    for name, value in {**parameters, "AWS::Partition": "aws", "AWS::Region": "eu-west-1",
                        "AWS::AccountId": "123456789012"}.items():
        text = text.replace("${" + name + "}", value)
    return str(text)


def _grants(resources: dict[str, Any], function: str, prefix: str) -> list[tuple[str | None, dict[str, Any]]]:
    return [(c, s) for c, s in _conditional_statements(resources[function])
            if any(str(a).startswith(prefix) for a in _as_list(s["Action"]))]


@pytest.mark.parametrize(
    ("function", "models"),
    [("ChatFunction", ["BedrockChatModelId", "BedrockFastModelId"]), ("JobWorkerFunction", ["BedrockFastModelId"]),
     ("WeComInboundFunction", ["BedrockChatModelId", "BedrockFastModelId"])],
)
def test_bedrock_invoke_is_granted_only_with_bedrock_and_only_on_the_configured_models(
    template: dict[str, Any], resources: dict[str, Any], function: str, models: list[str]
) -> None:
    # Given the function's bedrock grants,
    ((condition, statement),) = _grants(resources, function, "bedrock:")
    # Then there is one, only when the provider is bedrock, for InvokeModel alone,
    assert condition == "UsesBedrock"
    assert _as_list(statement["Action"]) == ["bedrock:InvokeModel"]
    # on the inference profile of each configured id and on the foundation model it routes to.
    parameters = {**parameter_defaults(template), "BedrockChatModelId": "eu.anthropic.claude-sonnet-5-5"}
    arns = {_resolve_bedrock_arn(r, parameters) for r in _as_list(statement["Resource"])}
    expected_models = [parameters[m] for m in models]
    assert arns == {
        *(f"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/{m}" for m in expected_models),
        *(f"arn:aws:bedrock:*::foundation-model/{_BEDROCK_PREFIX.sub('anthropic.', m)}" for m in expected_models),
    }
    assert all("*" not in arn.split("/", 1)[1] for arn in arns)  # never a wildcard model


#: The functions besides the LLM ones that read project secrets, and the one prefix each reads under.
SECRET_READERS = {"ReminderFunction": "ReminderWebhookSecretPrefix", "WeComCallbackFunction": "ChannelSecretPrefix",
                  "WeComSenderFunction": "ChannelSecretPrefix", "SessionsFunction": "ClinicalTokenSecretPrefix"}


def test_no_other_function_may_invoke_bedrock_or_read_the_key(resources: dict[str, Any]) -> None:
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function" or logical_id in (
                "ChatFunction", "JobWorkerFunction", "WeComInboundFunction"):
            continue
        assert _grants(resources, logical_id, "bedrock:") == [], logical_id
        reads = _grants(resources, logical_id, "secretsmanager:GetSecretValue")
        # The ReminderFunction reads the webhooks' HMAC keys, the WeCom callback and sender the channels'
        # credentials, the SessionsFunction the REDCap tokens (its identifier firewall's subject index): each only
        # under its own prefix, never the API key (writes and deletions: test_project_secrets_template.py).
        scoped = [json.dumps(s["Resource"]) for _, s in reads]
        prefix = SECRET_READERS.get(logical_id, "")
        assert all("AnthropicSecretName" not in r and f"secret:${{{prefix}}}*" in r for r in scoped), logical_id
        assert reads == [] or logical_id in SECRET_READERS, logical_id


def test_worker_reads_the_key_only_with_the_anthropic_provider(resources: dict[str, Any]) -> None:
    # (the REDCap tokens, read with any provider, and the removal's secret deletions aside)
    reads = _grants(resources, "JobWorkerFunction", "secretsmanager:GetSecretValue")
    ((condition, statement),) = [(c, s) for c, s in reads if s.get("Sid") != "ClinicalTokenSecrets"]
    assert condition == "UsesAnthropicApi"
    assert _as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]


# ---------------------------------------------------------------------------------------- alarms
def _alarm(resources: dict[str, Any], logical_id: str) -> dict[str, Any]:
    assert resources[logical_id]["Type"] == "AWS::CloudWatch::Alarm"
    return dict(resources[logical_id]["Properties"])


@pytest.mark.parametrize(("alarm", "metric"), [("LLMModelNotFoundAlarm", "LLMModelNotFound"),
                                               ("LLMAuthErrorAlarm", "LLMAuthError")])
def test_one_model_not_found_or_auth_error_alarms_the_admins(
    template: dict[str, Any], resources: dict[str, Any], alarm: str, metric: str
) -> None:
    props = _alarm(resources, alarm)
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    # The adapter emits the metric in the functions' namespace with the service dimension only.
    assert props["Namespace"] == variables["POWERTOOLS_METRICS_NAMESPACE"]
    assert props["MetricName"] == metric
    assert props["Dimensions"] == [{"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}]
    assert (props["Statistic"], props["Threshold"], props["ComparisonOperator"]) == (
        "Sum", 1, "GreaterThanOrEqualToThreshold")
    assert props["AlarmActions"] == [{"Ref": "AdminAlertsTopic"}]
    assert props["TreatMissingData"] == "notBreaching"


def test_fallback_rate_alarm_sums_every_task_and_reason(template: dict[str, Any], resources: dict[str, Any]) -> None:
    props = _alarm(resources, "LLMFallbackRateAlarm")
    namespace = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    (query,) = props["Metrics"]
    # A Metrics Insights query: LLMFallback summed over all its dimension values (task, reason).
    assert query["Expression"] == f"SELECT SUM(LLMFallback) FROM {namespace}"
    assert (query["Period"], query["ReturnData"]) == (300, True)
    assert props["Threshold"] == {"Ref": "LlmFallbackAlarmThreshold"}
    assert template["Parameters"]["LlmFallbackAlarmThreshold"]["Default"] == 5
    assert (props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (3, 2)
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["AlarmActions"] == [{"Ref": "AdminAlertsTopic"}]


def test_samconfig_deploys_a_real_provider_without_pinning_old_models() -> None:
    config = tomllib.loads((REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    for stage in ("dev", "prod"):
        overrides = config[stage]["deploy"]["parameters"]["parameter_overrides"]
        assert re.search(r"\bLlmProvider=(anthropic|bedrock)\b", overrides), stage
        assert deprecated_model_ids(_MODEL_ID.findall(overrides)) == [], stage
