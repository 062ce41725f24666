import pytest
from http_server import LocalServer, closed_port, make_spec

from aah.tools.registry.health import probe_arguments, probe_endpoints
from aah.tools.spec import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")


def test_probe_reports_up_down_unreachable_and_skipped() -> None:
    with LocalServer() as api:
        specs = [
            make_spec(api.url("/json"), name="up"),
            make_spec(api.url("/missing"), name="gone"),
            make_spec(api.url("/broken"), name="broken"),
            make_spec(f"http://127.0.0.1:{closed_port()}/x", name="refused"),
            make_spec(
                api.url("/json"), name="needs_arg", params=[ParameterSpec(name="id", required=True)]
            ),
            make_spec(
                api.url("/echo"),
                name="defaulted",
                params=[ParameterSpec(name="id", required=True, default="42")],
            ),
        ]
        results = {
            r.name: r for r in probe_endpoints(specs, concurrency=4, timeout=2, show_progress=False)
        }
    assert results["local__up"].state == "up" and results["local__up"].status == 200
    assert results["local__gone"].state == "down" and results["local__gone"].status == 404
    assert results["local__broken"].state == "down"
    assert results["local__refused"].state == "unreachable"
    assert results["local__needs_arg"].state == "skipped"
    assert "id" in results["local__needs_arg"].detail
    assert results["local__defaulted"].state == "up"


def test_probe_arguments_use_defaults() -> None:
    spec = make_spec(
        "http://127.0.0.1/x",
        name="x",
        params=[
            ParameterSpec(name="a", required=True, default="1"),
            ParameterSpec(name="b", default=None),
        ],
    )
    assert probe_arguments(spec) == {"a": "1"}
