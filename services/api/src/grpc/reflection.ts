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
import { grpcError } from "./grpc-errors.js";

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

/** A reflection stream as the admission check sees it. */
export type ReflectionCall = grpc.ServerDuplexStream<unknown, unknown>;

/**
 * Adds the reflection service describing proto/ and grpc.health.v1 to
 * `server`; with `admit`, a stream it rejects ends with its error (401 →
 * UNAUTHENTICATED) before any question is read.
 */
export function addReflection(server: Pick<grpc.Server, "addService">, admit?: (call: ReflectionCall) => Promise<void>): void {
  const set = readFileSync(require.resolve("@choreo/kit/descriptor-set.binpb"));
  // protoc's own descriptors, not proto-loader's: those are rebuilt by protobufjs without their
  // `dependency` lists (one file per package), and grpcurl or a client linking them finds no imports.
  const api = { "choreo.descriptors": { fileDescriptorProtos: filesOfSet(set) } } as unknown as protoLoader.PackageDefinition;
  const health = protoLoader.loadSync(healthProto);
  const target: Pick<grpc.Server, "addService"> = admit
    ? {
        addService: (service, impl) => {
          const guarded: grpc.UntypedServiceImplementation = {};
          for (const [name, fn] of Object.entries(impl)) {
            // Every method of the reflection services is one bidi stream (v1 and v1alpha: ServerReflectionInfo).
            const serve = fn as (call: ReflectionCall) => void;
            guarded[name] = (call: ReflectionCall) =>
              void admit(call).then(
                () => serve(call),
                (err: unknown) => call.emit("error", grpcError(err)),
              );
          }
          server.addService(service, guarded);
        },
      }
    : server;
  new ReflectionService({ ...api, ...health }).addToServer(target);
}
