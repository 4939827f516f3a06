"""Unit tests of the gpulab.dlstack.stack lookup."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError
from ansible_collections.gpulab.dlstack.plugins.lookup import stack as stack_plugin
from ansible_collections.gpulab.dlstack.plugins.lookup.stack import LookupModule
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack


@pytest.fixture
def lookup() -> LookupModule:
    """The plugin with its option definitions registered, as the plugin loader would do."""
    name = "gpulab.dlstack.stack"
    options = yaml.safe_load(stack_plugin.DOCUMENTATION)["options"]
    C.config.initialize_plugin_configuration_definitions("lookup", name, options)
    plugin = LookupModule()
    plugin._load_name = name
    return plugin


@pytest.mark.parametrize(
    ("terms", "kwargs", "expected"),
    [
        ([], {"tensorflow": "2.17", "gpus": ["8.6"]}, {"cuda": "12.3", "compute_capabilities": ["8.6"]}),
        (["2.12"], {}, {"cudnn": "8.6.0", "tensorflow": "2.12"}),
        ([], {"os": "debian12"}, {"tensorflow": "2.21", "python": "3.11"}),
        (
            [],
            {"tensorflow": "2.21", "cpu_only": True},
            {"cuda": None, "pip_requirements": ["tensorflow-cpu==2.21.*", "numpy>=1.26.0"]},
        ),
    ],
)
def test_lookup_returns_one_stack(
    lookup: LookupModule, terms: List[Any], kwargs: Dict[str, Any], expected: Dict[str, Any]
) -> None:
    result = lookup.run(terms, variables={}, **kwargs)
    assert isinstance(result, list) and len(result) == 1
    for key, value in expected.items():
        assert result[0][key] == value


def test_lookup_fails_with_conflicts(lookup: LookupModule) -> None:
    with pytest.raises(AnsibleLookupError) as info:
        lookup.run([], variables={}, tensorflow="2.19", want_tensorrt=True)
    assert "(1) TensorFlow 2.19 has no TF-TRT" in str(info.value)


def test_lookup_rejects_two_terms(lookup: LookupModule) -> None:
    with pytest.raises(AnsibleLookupError, match="at most one term"):
        lookup.run(["2.17", "2.18"], variables={})


def test_lookup_and_module_share_the_resolver(lookup: LookupModule) -> None:
    assert lookup.run(["2.16"], variables={}, gpus=["7.5"])[0] == resolve_stack({"tensorflow": "2.16", "gpus": ["7.5"]})
