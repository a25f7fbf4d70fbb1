#!/usr/bin/python3
"""List pods and watch them over choreo's gRPC API.

The client is generated from proto/ (once, into --gen-dir, again when a
.proto is newer) by Debian's protoc and gRPC plugin, and runs on Debian's
python3-grpcio and python3-protobuf.
The api speaks TLS: its serving certificate's CA (--ca), and a bearer token
(--token, or CHOREO_TOKEN) or a client certificate of the cluster's client CA
(--cert/--key).

  /usr/bin/python3 examples/grpc-python/list_and_watch.py \\
      --server 127.0.0.1:9090 --ca .choreo/pki/apiserver.crt \\
      --token "$(head -1 .choreo/tokens | cut -d, -f1)" --namespace default

Prints one line per pod (`pod default/web-1 Running`), then
`listed N pods at revision R`, then one line per change
(`ADDED default/web-2 revision=R+1`) until --events changes were seen or
--watch-seconds passed (the call's deadline: the server ends the watch).
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

import grpc
import grpc_tools

HERE = pathlib.Path(__file__).resolve().parent
PROTO = HERE.parent.parent / "proto"


def generate(out: pathlib.Path) -> None:
    """Generates the Python messages and stubs of proto/choreo into `out` when missing or stale.

    Debian's protoc (protobuf-compiler, 3.21: the python3-protobuf runtime's
    own version) with its gRPC plugin (protobuf-compiler-grpc: python3-grpcio's
    1.51). python3-grpc-tools' bundled protoc is 3.5: it reads no proto3
    `optional` and writes code the 4.21 runtime refuses; its well-known types
    (google/protobuf/descriptor.proto) are the import path here.
    """
    protos = sorted(PROTO.glob("choreo/**/*.proto"))
    stub = out / "choreo" / "api" / "v1" / "api_pb2_grpc.py"
    if stub.exists() and stub.stat().st_mtime >= max(p.stat().st_mtime for p in protos):
        return
    out.mkdir(parents=True, exist_ok=True)
    well_known = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    # Debian's, by path: under `npm test` node_modules/.bin comes first on PATH and holds the npm
    # `protoc` (33.x, choreo's own code generator), whose Python output needs a newer runtime.
    debian = pathlib.Path("/usr/bin/protoc")
    protoc = str(debian) if debian.exists() else shutil.which("protoc") or sys.exit("protoc not found: apt-get install protobuf-compiler")
    plugin = shutil.which("grpc_python_plugin") or sys.exit("grpc_python_plugin not found: apt-get install protobuf-compiler-grpc")
    args = [protoc, f"-I{PROTO}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}", f"--plugin=protoc-gen-grpc_python={plugin}"]
    subprocess.run(args + [str(p.relative_to(PROTO)) for p in protos], check=True)


def read_varint(buf: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf: bytes):
    """(field number, value) of a message's varint and length-delimited fields."""
    i = 0
    while i < len(buf):
        tag, i = read_varint(buf, i)
        if tag & 7 == 0:
            value, i = read_varint(buf, i)
        elif tag & 7 == 2:
            n, i = read_varint(buf, i)
            value, i = buf[i : i + n], i + n
        else:
            raise ValueError("unexpected wire type")
        yield tag >> 3, value


def kubernetes_status(err: grpc.RpcError, meta_pb2):
    """The Kubernetes Status in a failed call's grpc-status-details-bin (google.rpc.Status, details[] Any)."""
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for number, detail in fields(value):
            if number != 3:
                continue
            any_fields = dict(fields(detail))
            if any_fields.get(1) == b"type.googleapis.com/choreo.meta.v1.Status":
                return meta_pb2.Status.FromString(any_fields.get(2, b""))
    return None


def credentials(args) -> grpc.ChannelCredentials:
    ca = pathlib.Path(args.ca).read_bytes() if args.ca else None
    key = pathlib.Path(args.key).read_bytes() if args.key else None
    cert = pathlib.Path(args.cert).read_bytes() if args.cert else None
    tls = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    token = args.token or os.environ.get("CHOREO_TOKEN", "")
    if not token:
        return tls
    return grpc.composite_channel_credentials(tls, grpc.access_token_call_credentials(token))


def name_of(obj) -> str:
    kind = obj.WhichOneof("kind")
    meta = getattr(obj, kind).metadata if kind else None
    return f"{meta.namespace}/{meta.name}" if meta else "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default="127.0.0.1:9090")
    p.add_argument("--ca", help="the api's serving certificate CA (PEM)")
    p.add_argument("--token", help="bearer token (default: $CHOREO_TOKEN)")
    p.add_argument("--cert", help="client certificate (PEM) of the cluster's client CA")
    p.add_argument("--key", help="its key (PEM)")
    p.add_argument("--namespace", default="default", help='"" for every namespace')
    p.add_argument("--events", type=int, default=0, help="stop after this many changes (0: until --watch-seconds)")
    p.add_argument("--watch-seconds", type=float, default=60)
    p.add_argument("--gen-dir", default=str(HERE / "gen"))
    args = p.parse_args()

    generate(pathlib.Path(args.gen_dir))
    sys.path.insert(0, args.gen_dir)
    from choreo.api.v1 import api_pb2, api_pb2_grpc  # noqa: E402 (generated above)
    from choreo.meta.v1 import meta_pb2  # noqa: E402

    with grpc.secure_channel(args.server, credentials(args)) as channel:
        api = api_pb2_grpc.ApiStub(channel)
        try:
            listed = api.List(api_pb2.ListRequest(resource="pods", namespace=args.namespace), timeout=10)
        except grpc.RpcError as err:
            status = kubernetes_status(err, meta_pb2)
            print(f"list failed: {err.code().name} {status.reason if status else ''} {err.details()}", file=sys.stderr)
            return 1
        for obj in listed.items:
            print(f"pod {name_of(obj)} {obj.pod.status.phase or 'Pending'}")
        print(f"listed {len(listed.items)} pods at revision {listed.metadata.resource_version}", flush=True)

        seen = 0
        watch = api.Watch(
            api_pb2.WatchRequest(resource="pods", namespace=args.namespace, resource_version=listed.metadata.resource_version),
            timeout=args.watch_seconds,
        )
        try:
            for ev in watch:
                print(f"{ev.type} {name_of(ev.object)} revision={ev.revision}", flush=True)
                seen += 1
                if args.events and seen >= args.events:
                    watch.cancel()
                    break
        except grpc.RpcError as err:
            if err.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                status = kubernetes_status(err, meta_pb2)
                print(f"watch failed: {err.code().name} {status.reason if status else ''} {err.details()}", file=sys.stderr)
                return 1
    print(f"watched {seen} changes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
