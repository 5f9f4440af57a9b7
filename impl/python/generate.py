"""Generates svclab_impl._gen from the repository's .proto files.

The .proto files stay where the Go module keeps them (proto/); each is
copied into a scratch tree under the path svclab_impl/_gen/<pkg>/<file>,
so that grpcio-tools writes modules that import each other as
``svclab_impl._gen.<pkg>.<file>_pb2``. Run by ``make pyimpl``; the output is
not committed.

    python generate.py [PROTO_DIR] [OUT_DIR]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]

HERE = Path(__file__).resolve().parent
PROTOS = ["selector/selector.proto", "rpcops/rpcops.proto", "host/v1/host.proto"]
PACKAGE = Path("svclab_impl") / "_gen"


def generate(proto_dir: Path, out_dir: Path) -> None:
    gen = out_dir / PACKAGE
    if gen.exists():
        shutil.rmtree(gen)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for p in PROTOS:
            dst = root / PACKAGE / p
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(proto_dir / p, dst)
        include = Path(protoc.__file__).parent / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{include}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            *[str(PACKAGE / p) for p in PROTOS],
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed: {' '.join(args)}")
    for d in [gen, *[p for p in gen.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()


def main() -> None:
    proto_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "proto"
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "src"
    generate(proto_dir, out_dir)


if __name__ == "__main__":
    main()
