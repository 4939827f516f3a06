"""Package built by the tensorflow_build role's test workspace."""

import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def build_info():
    """The configuration the wheel was built with."""
    with open(os.path.join(_HERE, "build_info.json"), encoding="utf-8") as handle:
        return json.load(handle)
