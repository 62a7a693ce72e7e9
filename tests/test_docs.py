"""The config examples of README.md and docs/ are valid configs as written (issue 35 §6, in part)."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import ROOT
from routecore.policy import Policy
from routecore.specs import parse_config

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    (p.name, b) for p in PAGES for b in re.findall(r"```yaml\n(.*?)```", p.read_text(encoding="utf-8"), re.S)
]


@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_a_yaml_config_block_parses(page, block):
    data = yaml.safe_load(block)
    routes, tools = parse_config(data, page)
    assert routes or tools
    Policy.from_dict(data.get("policy"), f"{page}: policy")


def test_there_is_a_config_example():
    assert BLOCKS
