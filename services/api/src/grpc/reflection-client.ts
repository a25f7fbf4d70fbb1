// A gRPC client built at run time from server reflection alone (what grpcurl
// does): the server's file descriptors are fetched over
// grpc.reflection.v1.ServerReflection and loaded with @grpc/proto-loader — no
// .proto file of choreo's. Used by the tests; a model for clients in any language.
import { createRequire } from "node:module";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";

const require = createRequire(import.meta.url);
// The reflection protocol's own (standard) definition, shipped with @grpc/reflection.
const REFLECTION_PROTO = path.join(path.dirname(require.resolve("@grpc/reflection/package.json")), "build/proto/grpc/reflection/v1/reflection.proto");

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}

type ReflectionStub = grpc.Client & { ServerReflectionInfo(): grpc.ClientDuplexStream<Record<string, string>, ReflectionResponse> };

/** One question over a fresh reflection stream. */
function ask(stub: ReflectionStub, req: Record<string, string>, deadlineMs: number): Promise<ReflectionResponse> {
  return new Promise((resolve, reject) => {
    const call = stub.ServerReflectionInfo();
    const timer = setTimeout(() => (call.cancel(), reject(new Error("reflection: no answer"))), deadlineMs);
    call.on("data", (res: ReflectionResponse) => {
      clearTimeout(timer);
      call.end();
      if (res.error_response) reject(new Error(`reflection: ${res.error_response.error_message}`));
      else resolve(res);
    });
    call.on("error", (err) => (clearTimeout(timer), reject(err)));
    call.write({ host: "", ...req });
  });
}

/** The name of a FileDescriptorProto (field 1). */
function fileName(bytes: Uint8Array): string {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === 2) return r.string();
    r.skip(wire);
  }
  return "";
}

/** What reflection told: the services, and every file descriptor they need, as a package definition. */
export interface Reflected {
  services: string[];
  definition: protoLoader.PackageDefinition;
  /** The loaded package tree: `reflected.grpc.choreo.api.v1.Api` is a client constructor. */
  grpc: grpc.GrpcObject;
}

/** Lists the server's services and fetches the descriptors of `symbols` (and their imports) by reflection. */
export async function reflect(
  address: string,
  credentials: grpc.ChannelCredentials,
  symbols: string[],
  opts: { deadlineMs?: number; loader?: protoLoader.Options } = {},
): Promise<Reflected> {
  const reflection = grpc.loadPackageDefinition(protoLoader.loadSync(REFLECTION_PROTO, { keepCase: true })) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: new (a: string, c: grpc.ChannelCredentials) => ReflectionStub } } };
  };
  const stub = new reflection.grpc.reflection.v1.ServerReflection(address, credentials);
  const deadline = opts.deadlineMs ?? 10_000;
  try {
    const listed = await ask(stub, { list_services: "" }, deadline);
    const services = (listed.list_services_response?.service ?? []).map((s) => s.name);
    // Files by name; a file's imports the server did not send yet are asked for by name.
    const files = new Map<string, Uint8Array>();
    const add = (res: ReflectionResponse): void => {
      for (const f of res.file_descriptor_response?.file_descriptor_proto ?? []) files.set(fileName(f), f);
    };
    for (const symbol of symbols) add(await ask(stub, { file_containing_symbol: symbol }, deadline));
    for (let missing = imports(files); missing.length; missing = imports(files)) {
      for (const name of missing) add(await ask(stub, { file_by_filename: name }, deadline));
    }
    // A FileDescriptorSet is `repeated FileDescriptorProto file = 1`.
    const w = new BinaryWriter();
    for (const f of files.values()) w.uint32(10).bytes(f);
    const definition = protoLoader.loadFileDescriptorSetFromBuffer(Buffer.from(w.finish()), opts.loader);
    return { services, definition, grpc: grpc.loadPackageDefinition(definition) };
  } finally {
    stub.close();
  }
}

/** The imports (field 3) of the held files that are not held. */
function imports(files: Map<string, Uint8Array>): string[] {
  const want = new Set<string>();
  for (const bytes of files.values()) {
    const r = new BinaryReader(bytes);
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 3 && wire === 2) want.add(r.string());
      else r.skip(wire);
    }
  }
  return [...want].filter((f) => !files.has(f));
}
