// Stores every file of the monitor's bundle also as NAME.br (brotli, quality 11) and NAME.gz
// (gzip, level 9), where that is smaller, so the daemon sends browsers a compressed copy without
// compressing per request. Prints the bundle's size plain and as brotli sends it.
//   node precompress.mjs DIR
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node precompress.mjs DIR");
  process.exit(2);
}
let plain = 0;
let sent = 0;
for (const name of readdirSync(dir)) {
  const path = join(dir, name);
  if (/\.(br|gz)$/.test(name) || !statSync(path).isFile()) continue;
  const data = readFileSync(path);
  const br = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  const gz = gzipSync(data, { level: 9 });
  for (const [ext, copy] of [["br", br], ["gz", gz]]) {
    if (copy.length < data.length) writeFileSync(`${path}.${ext}`, copy);
  }
  plain += data.length;
  sent += Math.min(br.length, data.length);
}
const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
console.log(`monitor bundle: ${kb(plain)}, ${kb(sent)} as brotli`);
