from __future__ import annotations

import pytest

from host.process import ProcessOutcome, build_child_env
from host.process._env import scrub_environment


def test_scrub_drops_credential_shaped_names_case_insensitively_by_substring() -> None:
    ambient = {
        "MONKEY": "1",
        "my_token": "2",
        "Db_Password": "3",
        "AWS_SECRET_ACCESS_KEY": "4",
        "apikey": "5",
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy:3128",
    }
    assert scrub_environment(ambient) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy:3128",
    }


def test_scrub_drops_names_starting_with_dsh_in_any_case_but_keeps_dsh_elsewhere() -> None:
    ambient = {"dsh_x": "1", "DSH_ACP_TEST_FACT": "2", "Dsh_Mode": "3", "X_DSH_Y": "4", "DSHX": "5"}
    assert scrub_environment(ambient) == {"X_DSH_Y": "4", "DSHX": "5"}


def test_explicit_entries_win_even_for_credential_shaped_and_dsh_names(monkeypatch: pytest.MonkeyPatch) -> None:
    ambient = {"PATH": "/usr/bin", "DEEPSEEK_API_KEY": "ambient", "DSH_FACT": "ambient", "HOME": "/home/u"}
    for name, value in ambient.items():
        monkeypatch.setenv(name, value)
    explicit = {"DEEPSEEK_API_KEY": "explicit", "DSH_FACT": "managed", "HOME": "/elsewhere"}
    env = build_child_env(explicit)
    assert {name: env[name] for name in ambient} == {
        "PATH": "/usr/bin",
        "DEEPSEEK_API_KEY": "explicit",
        "DSH_FACT": "managed",
        "HOME": "/elsewhere",
    }


def test_child_env_defaults_to_the_scrubbed_host_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_TEST_AMBIENT_SECRET_TOKEN", "leak-me")
    monkeypatch.setenv("PROCESS_TEST_PLAIN", "kept")
    env = build_child_env({"FORWARDED": "yes"})
    assert "ACP_TEST_AMBIENT_SECRET_TOKEN" not in env
    assert env["PROCESS_TEST_PLAIN"] == "kept"
    assert env["FORWARDED"] == "yes"


def test_child_env_follows_every_change_to_the_host_environment_between_spawns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCESS_TEST_CHANGING", "first")
    monkeypatch.delenv("PROCESS_TEST_LATER", raising=False)
    assert build_child_env({})["PROCESS_TEST_CHANGING"] == "first"
    assert build_child_env({}, inherit="minimal").get("PROCESS_TEST_CHANGING") is None
    monkeypatch.setenv("PROCESS_TEST_CHANGING", "second")
    monkeypatch.setenv("PROCESS_TEST_LATER", "added")
    env = build_child_env({})
    assert (env["PROCESS_TEST_CHANGING"], env["PROCESS_TEST_LATER"]) == ("second", "added")
    monkeypatch.delenv("PROCESS_TEST_CHANGING")
    monkeypatch.setenv("LC_PROCESS_TEST", "x")
    assert "PROCESS_TEST_CHANGING" not in build_child_env({})
    assert build_child_env({}, inherit="minimal")["LC_PROCESS_TEST"] == "x"
    # Each call returns its own dict: a caller's edit never reaches the next child.
    build_child_env({})["PROCESS_TEST_LATER"] = "edited"
    assert build_child_env({})["PROCESS_TEST_LATER"] == "added"


@pytest.mark.parametrize(
    ("returncode", "expected"),
    [
        (0, ProcessOutcome(exit_code=0, signal=None)),
        (3, ProcessOutcome(exit_code=3, signal=None)),
        (-15, ProcessOutcome(exit_code=None, signal="SIGTERM")),
        (-9, ProcessOutcome(exit_code=None, signal="SIGKILL")),
    ],
)
def test_outcome_is_an_exit_code_or_a_signal_name(returncode: int, expected: ProcessOutcome) -> None:
    assert ProcessOutcome.from_returncode(returncode) == expected
