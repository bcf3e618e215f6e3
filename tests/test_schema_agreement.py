"""The layers agree: the Structs cover exactly what the reference ``ag_ui.core`` declares.

Everything expected here is derived from the installed ``ag-ui-protocol==1.0.0`` at test
time, not from a hand-written list.
"""

import subprocess
import sys
import typing

import msgspec
import pydantic
import pytest

import ag_ui.core as ref
import agui_fast.core as ours

from conftest import repo_file


def ref_models():
    return {
        name: obj
        for name in ref.__all__
        if isinstance(obj := getattr(ref, name), type) and issubclass(obj, pydantic.BaseModel)
    }


def test_every_ag_ui_core_name_is_importable():
    namespace = {}
    exec("from agui_fast.core import *", namespace)
    missing = [name for name in ref.__all__ if name not in namespace]
    assert missing == []
    assert sorted(ours.__all__) == sorted(ref.__all__)


def test_event_type_members_and_order():
    assert [m.name for m in ours.EventType] == [m.name for m in ref.EventType]
    assert [m.value for m in ours.EventType] == [m.value for m in ref.EventType]
    assert len(ours.EventType) == 31


def test_event_union_covers_every_event_type():
    ref_union = typing.get_args(typing.get_args(ref.Event)[0])
    ref_tags = {cls.model_fields["type"].default.value: cls.__name__ for cls in ref_union}
    our_tags = {cls.__struct_config__.tag: cls.__name__ for cls in typing.get_args(ours.Event)}
    assert our_tags == ref_tags
    assert set(ours.EVENT_CLASSES) == {m.value for m in ref.EventType}


@pytest.mark.parametrize("name", sorted(ref_models()))
def test_fields_wire_names_defaults_and_order_match(name):
    ref_cls = ref_models()[name]
    our_cls = getattr(ours, name)
    if name in ("BaseMessage", "GeneratedBaseModel", "ConfiguredBaseModel"):
        pytest.skip("abstract base of the reference; ours is the common Struct base")
    expected = tuple(
        (
            attr,
            f.serialization_alias or f.alias or attr,
            (not f.is_required()) and f.default is None,
        )
        for attr, f in ref_cls.model_fields.items()
    )
    assert our_cls.__agui_fields__ == expected
    # Every planned attribute exists: a field, or the class-level tag.
    struct_fields = {f.name: f for f in msgspec.structs.fields(our_cls)}
    tag_field = our_cls.__struct_config__.tag_field
    for attr, wire, _ in expected:
        if our_cls is ours.BaseEvent and attr == "type":
            continue  # each concrete event carries `type` as its msgspec tag
        if attr == tag_field:
            assert our_cls.__struct_config__.tag == getattr(
                ref_cls.model_fields[attr].default, "value", ref_cls.model_fields[attr].default
            )
            continue
        f = struct_fields[attr]
        assert f.encode_name == wire
        ref_field = ref_cls.model_fields[attr]
        assert f.required == ref_field.is_required(), attr
        if not ref_field.is_required():
            default = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            ref_default = getattr(ref_field.default, "value", ref_field.default)
            assert default == ref_default, attr


def test_generated_models_are_current():
    result = subprocess.run(
        [sys.executable, str(repo_file("tools", "gen_core.py")), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_unions_match():
    for union in ("Message", "ContentPart", "PartSource", "JsonPatchOperation",
                  "RunFinishedOutcome", "SubagentFinishedOutcome"):
        ref_members = typing.get_args(typing.get_args(getattr(ref, union) if hasattr(ref, union) else getattr(__import__("ag_ui._generated.models", fromlist=[union]), union))[0])
        our_members = typing.get_args(getattr(ours, union))
        assert [c.__name__ for c in our_members] == [c.__name__ for c in ref_members], union
