"""Write the fuzz corpora's seeds from tests/vectors (idempotent):

- patch_apply, patch_model: `[doc, patch]` for every case of the official suite, the
  fast-json-patch record and the state_deltas vectors (patch_apply also gets each seed
  with a leading space, which selects the fast-json-patch dialect);
- pointer: every `path` and `from` in those patches.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

HERE = pathlib.Path(__file__).parent
VECTORS = HERE.parent / "tests" / "vectors" / "client" / "json-patch"


def cases():
    for name in ("tests.json", "spec_tests.json"):
        for case in json.loads((VECTORS / name).read_text()):
            if "patch" in case:
                yield case["doc"], case["patch"]
    for name in ("fast-json-patch.jsonl", "state_deltas.jsonl"):
        for line in (VECTORS / name).read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                yield case["doc"], case["patch"]


def write(target: str, data: bytes) -> None:
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    for doc, patch in cases():
        seed = json.dumps([doc, patch], ensure_ascii=False).encode()
        write("patch_model", seed)
        write("patch_apply", seed)
        write("patch_apply", b" " + seed)
        for op in patch if isinstance(patch, list) else []:
            for key in ("path", "from"):
                if isinstance(op, dict) and isinstance(op.get(key), str):
                    write("pointer", op[key].encode())


if __name__ == "__main__":
    main()
