// The OpenAPI document clef serves (web/openapi.json, embedded in the binary) is valid OpenAPI
// 3.1, checked by a real validator (@seriousme/openapi-schema-validator, pinned in package.json).
// usage: node validate_openapi.mjs FILE   exit 0 valid, 1 invalid, 77 when the package is missing
import { readFileSync } from "node:fs";

let Validator;
try {
  ({ Validator } = await import("@seriousme/openapi-schema-validator"));
} catch (e) {
  console.error("SKIP: @seriousme/openapi-schema-validator is not installed (scripts/setup installs it): " + e.message);
  process.exit(77);
}
const file = process.argv[2];
const validator = new Validator();
const result = await validator.validate(JSON.parse(readFileSync(file, "utf8")));
if (!result.valid) {
  console.error(`${file} is not valid OpenAPI:`);
  console.error(JSON.stringify(result.errors, null, 2));
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${validator.version}`);
