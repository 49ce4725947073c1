"""sglang's own `--config` files (JSON or YAML: a flat mapping of ServerArgs field names) as lint
inputs, judged as `sglang serve MODEL --config FILE`.

sglang's dispatcher needs the model on the command line (catalog A1: a `model_path` in the file
does not count), so the launch names the file's `model_path` as its positional; the file itself
is read by the check exactly as sglang reads it (h3doctor/sglang/configfile.py: underscore keys,
no coercion, the CLI wins). Here we only find it and locate its keys.
"""

from __future__ import annotations

from h3doctor.inputs.launch import Launch, Note
from h3doctor.located import Document


def read_config(doc: Document) -> tuple[list[Launch], list[Note]]:
    data = doc.data
    model = data.get("model_path")
    if not isinstance(model, str) or not model:
        return [], [Note(doc.origin, doc.start, "sglang config file without a `model_path`: the launch that uses it "
                                                "names the model on its command line; not judged on its own")]
    tokens = ["sglang", "serve", model, "--config", doc.origin]
    launch = Launch(
        path=doc.origin, kind="sglang-config", label="sglang --config file", tokens=tokens,
        pos=doc.key_pos(("model_path",)), doc=doc, token_pos=[doc.start] * len(tokens),
        key_pos={k: doc.key_pos((k,)) for k in data},
    )
    return [launch], []
