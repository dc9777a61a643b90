"""``HarvestOptions`` refuses what no harvest can use as it is made, so a script gets the
refusal ``execbench harvest`` gives, naming the setting by its field where the command
line names its flag."""

from __future__ import annotations

import math

import pytest

from execbench.harvest.options import HarvestOptions
from execbench.settings import SettingError


@pytest.mark.parametrize(("given", "message"), [
    ({"max_calls": 0}, "max_calls must be at least 1, not 0"),
    ({"max_events": -1}, "max_events must be at least 1, not -1"),
    ({"max_value_nodes": 0}, "max_value_nodes must be at least 1, not 0"),
    ({"max_lines": 0}, "max_lines must be at least 1, not 0"),
    ({"max_trace_chars": 0}, "max_trace_chars must be at least 1, not 0"),
    ({"max_file_bytes": 0}, "max_file_bytes must be at least 1, not 0"),
    ({"timeout": 0.0}, "timeout must be positive, not 0.0"),
    ({"test_timeout": -2.5}, "test_timeout must be positive, not -2.5"),
    ({"test_timeout": math.nan}, "test_timeout must be positive, not nan"),
    ({"pip_args": ("--no-index",)}, "pip_args is for install_deps"),
])
def test_each_bad_setting_is_refused_by_name(given: dict, message: str) -> None:
    with pytest.raises(SettingError) as refused:
        HarvestOptions(**given)
    assert str(refused.value) == message


def test_the_command_line_names_the_flags() -> None:
    with pytest.raises(SettingError) as refused:
        HarvestOptions(pip_args=("--no-index",))
    assert refused.value.named({"pip_args": "--pip-args", "install_deps": "--install-deps"}) \
        == "--pip-args is for --install-deps"


def test_good_settings_pass() -> None:
    options = HarvestOptions(max_calls=1, timeout=0.5, install_deps=True, pip_args=("-q",))
    assert options.pip_args == ("-q",)
