// Load test of `pocket serve` on loopback (docs/server.md, "Load test"): starts the server on a free port,
// runs rounds of C concurrent clients x R requests each (chat, temperature 0, every other one streamed), and
// checks every answer against `pocket run --chat --temp 0` for the same prompt. Reports per round p50/p99
// latency, aggregate generated tokens/s and the server's RSS after it (flat across rounds: no leak), after a
// warm-up. No dependencies (Node's fetch). Usage:
//   node bench/server_load.mjs POCKET MODEL [--clients 8] [--requests 50] [--rounds 3] [--parallel 2] [--threads T]
//                                     [--max-tokens 64]
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const [pocket, model] = args;
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const clients = opt('--clients', 8);
const requests = opt('--requests', 50);
const parallel = opt('--parallel', 2);
const maxTokens = opt('--max-tokens', 64);
const rounds = opt('--rounds', 3);
const threads = opt('--threads', 0);  // 0: the server's default (1 per session with --parallel > 1)

const prompts = [
  '提取JSON：黑色保温杯，品牌山泉，尺码：500毫升，￥89。',
  '提取JSON：蓝色帆布鞋，品牌远行，尺码：42，￥199，面料帆布。',
  '帮我订一张明天去上海的机票',
  '今天北京的天气怎么样？',
  'Extract JSON: red cotton T-shirt, brand Summit, size M, $19.',
  'Route: summarise this 40-page contract and compare it with last year\'s version.',
  '把这句话翻译成英文：我明天去开会。',
  '你好',
];

function rss_kib(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) : -1;
}

function start() {
  const proc = spawn(pocket, ['serve', '-m', model, '--port', '0', '--parallel', String(parallel), '-c', '512',
                              '--queue', String(clients * 2), ...(threads > 0 ? ['-t', String(threads)] : [])], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/http:\/\/127\.0\.0\.1:(\d+)\/v1/);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.on('exit', (code) => reject(new Error(`pocket serve exited ${code}: ${err}`)));
  });
}

function cli_answer(prompt) {
  const out = execFileSync(pocket, ['run', '-m', model, '--chat', '--temp', '0', '-n', String(maxTokens), '-c', '512',
                                    '-p', prompt], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.slice(prompt.length + 1, -1);
}

async function chat(base, prompt, stream) {
  const body = { model: 'm', messages: [{ role: 'user', content: prompt }], temperature: 0, max_tokens: maxTokens,
                 stream };
  const t0 = performance.now();
  const res = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                         body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let text = '';
  let tokens = 0;
  if (!stream) {
    const j = await res.json();
    text = j.choices[0].message.content;
    tokens = j.usage.completion_tokens;
  } else {
    const raw = await res.text();
    for (const line of raw.split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const j = JSON.parse(line.slice(6));
      if (j.error) throw new Error(JSON.stringify(j.error));
      text += j.choices[0]?.delta?.content ?? '';
      if (j.usage) tokens = j.usage.completion_tokens;
    }
  }
  return { text, tokens, ms: performance.now() - t0 };
}

const want = new Map(prompts.map((p) => [p, cli_answer(p)]));
const server = await start();
const base = `http://127.0.0.1:${server.port}/v1`;
for (const p of prompts) await chat(base, p, false);  // warm-up: every prompt once
const rssBefore = rss_kib(server.proc.pid);

let errors = 0;
let mismatches = 0;
const results = [];
for (let round = 1; round <= rounds; ++round) {
  let totalTokens = 0;
  const latencies = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let r = 0; r < requests; ++r) {
      const prompt = prompts[(c + r) % prompts.length];
      try {
        const out = await chat(base, prompt, r % 2 === 1);
        latencies.push(out.ms);
        totalTokens += out.tokens;
        if (out.text !== want.get(prompt)) {
          mismatches++;
          if (mismatches <= 3) console.error(`mismatch: ${JSON.stringify(prompt)}: ${JSON.stringify(out.text)} vs ${JSON.stringify(want.get(prompt))}`);
        }
      } catch (e) {
        errors++;
        if (errors <= 3) console.error(`error: ${e.message}`);
      }
    }
  }));
  const wall = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  results.push({ round, completed: latencies.length, wall_s: +wall.toFixed(2), p50_ms: +pct(0.5).toFixed(1),
                 p99_ms: +pct(0.99).toFixed(1), generated_tokens: totalTokens,
                 tokens_per_s: +(totalTokens / wall).toFixed(1), requests_per_s: +(latencies.length / wall).toFixed(1),
                 rss_after_kib: rss_kib(server.proc.pid) });
}
server.proc.kill('SIGTERM');
const exitCode = await new Promise((resolve) => server.proc.on('exit', (c) => resolve(c)));
const result = { clients, requests_per_client: requests, parallel, threads, max_tokens: maxTokens, errors,
                 mismatches_vs_cli: mismatches, rss_after_warmup_kib: rssBefore, rounds: results, server_exit: exitCode };
console.log(JSON.stringify(result, null, 1));
process.exit(errors === 0 && mismatches === 0 && exitCode === 0 ? 0 : 1);
