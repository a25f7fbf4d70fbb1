// gRPC server reflection (grpc.reflection.v1 and v1alpha): every message and
// service of proto/ (the FileDescriptorSet proto/gen.sh writes) and the health
// service, so grpcurl, grpcui, Postman or a client built at run time need no
// .proto files of ours.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type * as grpc from "@grpc/grpc-js";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { protoPath as healthProto } from "grpc-health-check";

const require = createRequire(import.meta.url);

/** The FileDescriptorProtos of a FileDescriptorSet (`repeated FileDescriptorProto file = 1`), as protoc wrote them. */
export function filesOfSet(set: Uint8Array): Buffer[] {
  const r = new BinaryReader(set);
  const files: Buffer[] = [];
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === 2) files.push(Buffer.from(r.bytes()));
    else r.skip(wire);
  }
  return files;
}

/** Adds the reflection service describing proto/ and grpc.health.v1 to `server`. */
export function addReflection(server: Pick<grpc.Server, "addService">): void {
  const set = readFileSync(require.resolve("@choreo/kit/descriptor-set.binpb"));
  // protoc's own descriptors, not proto-loader's: those are rebuilt by protobufjs without their
  // `dependency` lists (one file per package), and grpcurl or a client linking them finds no imports.
  const api = { "choreo.descriptors": { fileDescriptorProtos: filesOfSet(set) } } as unknown as protoLoader.PackageDefinition;
  const health = protoLoader.loadSync(healthProto);
  new ReflectionService({ ...api, ...health }).addToServer(server);
}
