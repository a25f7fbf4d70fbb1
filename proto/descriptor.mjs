// Writes a protobufjs JSON descriptor of the given protos (paths relative to
// proto/), used at run time to walk messages field by field. Comments are kept
// (`//` ones too: alternateCommentMode): they are the OpenAPI descriptions.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

const [out, ...files] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
// choreo/meta/v1/options.proto extends FieldOptions; protobufjs bundles no
// descriptor.proto, so a stub (no fields, the extension range) stands in.
protobuf.common("descriptor", { FieldOptions: { fields: {}, extensions: [[1000, 536870911]] } });
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(here, target);
root.loadSync(files, { keepCase: false, alternateCommentMode: true });
root.resolveAll();
// protobufjs writes `"comment": null` for every uncommented element: dropped.
const json = JSON.stringify(root.toJSON({ keepComments: true }), (k, v) => (k === "comment" && v === null ? undefined : v), 1);
writeFileSync(out, json + "\n");
