// Side-by-side tokenizer throughput: Hugging Face tokenizers (Rust, via the npm package @anush008/tokenizers)
// against pocket (bench/tokenizer/pocket_tokenizer_bench), single thread, same corpus, same session.
// Usage: node bench/tokenizer_hf.mjs [--runs N] [--pocket PATH_TO_BENCH]
// Env: TOKENIZERS_NODE_DIR (folder with node_modules, default /work/scratch/node), POCKET_SHARED_DATA.
// Skips (exit 0, a message) when the package, the data or the pocket binary is absent.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';

const here = path.dirname(url.fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const runs = Number(arg('--runs', '7'));
const dataDir = process.env.POCKET_SHARED_DATA || path.resolve(root, '..', 'shared', 'data');
const nodeDir = process.env.TOKENIZERS_NODE_DIR || '/work/scratch/node';
const pocketBench = arg('--pocket', path.join(root, 'build', 'tok', 'bench', 'tokenizer', 'pocket_tokenizer_bench'));

function skip(why) {
  console.log(`SKIP tokenizer_hf: ${why}`);
  process.exit(0);
}

let hf;
try {
  hf = createRequire(path.join(nodeDir, 'package.json'))('@anush008/tokenizers');
} catch (e) {
  skip(`@anush008/tokenizers not found under ${nodeDir} (npm install it there)`);
}
const tokJson = path.join(dataDir, 'tokenizers', 'qwen3', 'tokenizer.json');
const inp = path.join(dataDir, 'tokenizers', 'qwen3', 'qwen3-zhen.inp');
if (!fs.existsSync(tokJson) || !fs.existsSync(inp)) skip(`reference data absent under ${dataDir}`);

// Both sides split special-token text (the library always does; pocket with parse_special).
// The same corpus as tokenizer_bench.cc: the cases joined by "\n", whole copies up to 1 MiB.
const all = fs.readFileSync(inp, 'utf8');
const sep = '\n__ggml_vocab_test__\n';
const lines = [];
for (let pos = 0, at; (at = all.indexOf(sep, pos)) >= 0; pos = at + sep.length) lines.push(all.slice(pos, at));
const one = lines.map((l) => l + '\n').join('');
let text = '';
while (Buffer.byteLength(text) < (1 << 20)) text += one;
const bytes = Buffer.byteLength(text);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const tok = hf.Tokenizer.fromFile(tokJson);
let nTokens = 0;
await tok.encode(text, null, { addSpecialTokens: false }); // warm-up (fills the library's word cache)
const hfMBs = [];
for (let r = 0; r < runs; ++r) {
  const t0 = process.hrtime.bigint();
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  nTokens = enc.getIds().length;
  hfMBs.push(bytes / 1e6 / dt);
}

let pocketMBs = null;
let pocketTokens = null;
if (fs.existsSync(pocketBench)) {
  const out = execFileSync(pocketBench, [
    '--benchmark_filter=BM_EncodeQwen3Mixed1MiB', `--benchmark_repetitions=${runs}`, '--benchmark_format=json',
  ], { encoding: 'utf8', env: { ...process.env, POCKET_SHARED_DATA: dataDir }, stdio: ['ignore', 'pipe', 'ignore'] });
  const j = JSON.parse(out);
  const reps = j.benchmarks.filter((b) => b.run_type === 'iteration');
  // Wall time per encode of the corpus, as timed for the Hugging Face library above.
  pocketMBs = median(reps.map((b) => b.bytes / 1e6 / (b.real_time / 1e3)));
  pocketTokens = reps[0].tokens;
} else {
  console.log(`(pocket bench not found at ${pocketBench}; build with -DPOCKET_BUILD_BENCH=ON)`);
}

const hfMed = median(hfMBs);
console.log(`corpus: ${bytes} bytes of mixed Chinese/English (qwen3-zhen x${Math.round(bytes / Buffer.byteLength(one))}), ${runs} runs, median`);
console.log(`hf tokenizers (@anush008/tokenizers): ${hfMed.toFixed(2)} MB/s  (${nTokens} tokens)`);
if (pocketMBs !== null) {
  console.log(`pocket:                               ${pocketMBs.toFixed(2)} MB/s  (${pocketTokens} tokens)`);
  console.log(`ratio pocket / hf: ${(pocketMBs / hfMed).toFixed(2)}x`);
}
