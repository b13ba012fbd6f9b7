import time, boto3
from agent_memory.chat import handle_message
from tests.unit.chat_support import make_deps, seed_project, RecordingLLM
from agent_memory.text import dynamodb_item_size

def test_speed(repo, aws):
    seed_project(repo, "p1")
    deps = make_deps(repo)
    t = time.perf_counter()
    body = "患者主诉头痛三天伴有恶心" * 250
    for i in range(100):
        r = handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=f"{i}{body}", patient_id=None, deadline=None)
    print("100 turns", time.perf_counter() - t, r.intents, r.reply[:50])
    c = boto3.client("dynamodb")
    item = c.get_item(TableName=aws["SessionsTable"], Key={"pk": {"S": "p1#s1"}, "sk": {"S": "SESSION"}})["Item"]
    print("size", dynamodb_item_size(item))
    t = time.perf_counter()
    ms = repo.list_messages("p1", "s1")
    print(len(ms), time.perf_counter() - t)
