// `pocket serve` driven by the official openai npm client: starts the server on 127.0.0.1 (a free port,
// read from its start line), then checks models, plain and streamed chat (equal to each other and to
// `pocket run --chat` at temperature 0), a json_schema response parsed and validated, text completions,
// a wrong key (401) and a malformed body (400). Usage: node openai_client_test.mjs POCKET MODEL
import { spawn, execFileSync } from 'node:child_process';
import OpenAI from 'openai';

const [pocket, model] = process.argv.slice(2);
const KEY = 'test-key-' + process.pid;
let failures = 0;
function check(cond, what, detail = '') {
  if (cond) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAILED: ${what} ${detail}`);
  }
}

// Starts the server and resolves with its port once it prints the start line.
function start() {
  const proc = spawn(pocket, ['serve', '-m', model, '--port', '0', '--api-key', KEY, '-c', '512'],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no start line in 30 s: ' + err)), 30000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/http:\/\/127\.0\.0\.1:(\d+)\/v1/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), log: () => err });
      }
    });
    proc.on('exit', (code) => reject(new Error(`pocket serve exited ${code}: ${err}`)));
  });
}

// The answer `pocket run --chat` prints: stdout is the prompt, a newline, the answer and a newline.
function cli_answer(prompt, n) {
  const out = execFileSync(pocket, ['run', '-m', model, '--chat', '--temp', '0', '-n', String(n), '-c', '512',
                                    '-p', prompt], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.slice(prompt.length + 1, -1);
}

// A validator for the schema subset used here (independent of the server's constrained decoding).
function validate(value, schema, path = '$') {
  const errs = [];
  const t = schema.type;
  if (t === 'object') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: not an object`];
    for (const r of schema.required ?? []) if (!(r in value)) errs.push(`${path}.${r}: missing`);
    for (const [k, v] of Object.entries(value)) {
      const sub = schema.properties?.[k];
      if (!sub) {
        if (schema.additionalProperties === false) errs.push(`${path}.${k}: not allowed`);
      } else {
        errs.push(...validate(v, sub, `${path}.${k}`));
      }
    }
  } else if (t === 'string') {
    if (typeof value !== 'string') errs.push(`${path}: not a string`);
  } else if (t === 'number') {
    if (typeof value !== 'number') errs.push(`${path}: not a number`);
  } else if (t === 'array') {
    if (!Array.isArray(value)) errs.push(`${path}: not an array`);
    else value.forEach((x, i) => errs.push(...validate(x, schema.items, `${path}[${i}]`)));
  }
  return errs;
}

const server = await start();
const base = `http://127.0.0.1:${server.port}/v1`;
try {
  const client = new OpenAI({ apiKey: KEY, baseURL: base, maxRetries: 0, timeout: 60000 });

  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check(ids.length === 1 && ids[0] === 'pocket-nano-q4', 'models.list names the loaded model', JSON.stringify(ids));

  const prompt = '提取JSON：黑色保温杯，品牌山泉，尺码：500毫升，￥89。';
  const chat = await client.chat.completions.create({
    model: 'pocket-nano-q4', messages: [{ role: 'user', content: prompt }], temperature: 0, max_tokens: 64 });
  const content = chat.choices[0].message.content;
  check(chat.object === 'chat.completion' && content.length > 0, 'chat completion has content', JSON.stringify(chat));
  check(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0 &&
        chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens,
        'usage counts add up', JSON.stringify(chat.usage));
  const cli = cli_answer(prompt, 64);
  check(content === cli, 'temperature 0 answer equals pocket run --chat', `server ${JSON.stringify(content)} cli ${JSON.stringify(cli)}`);

  const stream = await client.chat.completions.create({
    model: 'pocket-nano-q4', messages: [{ role: 'user', content: prompt }], temperature: 0, max_tokens: 64,
    stream: true, stream_options: { include_usage: true } });
  let streamed = '';
  let usage = null;
  let finish = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    streamed += choice.delta?.content ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  check(chunks >= 3 && streamed === content, 'streamed deltas add up to the plain answer', JSON.stringify(streamed));
  check(finish === chat.choices[0].finish_reason, 'stream finish_reason', String(finish));
  check(usage && usage.completion_tokens === chat.usage.completion_tokens, 'final usage chunk', JSON.stringify(usage));

  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, brand: { type: 'string' }, price: { type: 'number' } },
    required: ['name', 'price'],
    additionalProperties: false,
  };
  const structured = await client.chat.completions.create({
    model: 'pocket-nano-q4', messages: [{ role: 'user', content: prompt }], temperature: 0, max_tokens: 96,
    response_format: { type: 'json_schema', json_schema: { name: 'product', schema, strict: true } } });
  let parsed = null;
  try {
    parsed = JSON.parse(structured.choices[0].message.content);
  } catch (e) {
    check(false, 'json_schema content parses', structured.choices[0].message.content);
  }
  if (parsed !== null) {
    const errs = validate(parsed, schema);
    check(errs.length === 0, 'json_schema content is valid against the schema', JSON.stringify(parsed) + ' ' + errs.join('; '));
  }

  const text = await client.completions.create({ model: 'pocket-nano-q4', prompt: 'Once upon a time', max_tokens: 8,
                                                 temperature: 0 });
  check(text.object === 'text_completion' && typeof text.choices[0].text === 'string' &&
        text.usage.completion_tokens <= 8, 'text completion', JSON.stringify(text));

  const wrong = new OpenAI({ apiKey: 'wrong', baseURL: base, maxRetries: 0 });
  try {
    await wrong.models.list();
    check(false, 'a wrong key is refused');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, 'a wrong key is refused with 401',
          `${e.constructor.name} ${e.status}`);
  }

  const bad = await fetch(`${base}/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: '{"messages": [{"role": "user", "content": "hi"}' });
  const badBody = await bad.json();
  check(bad.status === 400 && typeof badBody.error?.message === 'string' && badBody.error.type === 'invalid_request_error',
        'malformed JSON is a 400 with an OpenAI error body', JSON.stringify(badBody));

  try {
    await client.chat.completions.create({ model: 'pocket-nano-q4', messages: [{ role: 'user', content: 'x' }], n: 3 });
    check(false, 'n = 3 is refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, 'n = 3 is refused with 400', `${e.status}`);
  }
} catch (e) {
  check(false, 'unexpected exception', e.stack);
} finally {
  server.proc.kill('SIGTERM');
  const code = await new Promise((resolve) => server.proc.on('exit', (c) => resolve(c)));
  check(code === 0, 'the server exits 0 on SIGTERM', `${code}: ${server.log()}`);
}
console.log(failures === 0 ? 'all passed' : `${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
