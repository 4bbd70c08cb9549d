// SPDX-License-Identifier: MIT
// The client side of CI stage 46-openai-clients: streams from `batching-executor serve` with the
// official OpenAI Node SDK, reads curl's raw SSE output, and checks both against the server's
// trace (docs/tools/serve.md, "What is tested").
//
//   node stream_client.mjs sdk BASE_URL MODEL chat|completions MAX_TOKENS OUT.json
//   node stream_client.mjs sse SSE_FILE OUT.json        (a `curl -N` body)
//   node stream_client.mjs check TRACE.jsonl OUT.json...
//
// A result (OUT.json) is {id, content_chunks, role_chunks, usage_chunks, done, text_words,
// usage}: content chunks are the chunks with a choice (one per engine step), the role chunk is
// the chat stream's first (delta.role, empty content), the usage chunk has no choices.
import fs from 'node:fs';

const words = (s) => (s.match(/\S+/g) || []).length;

function tally(chunks, sawDone) {
  const r = { id: null, content_chunks: 0, role_chunks: 0, usage_chunks: 0, done: sawDone,
              text_words: 0, usage: null, finish_reason: null };
  for (const c of chunks) {
    if (r.id === null) r.id = c.id;
    if (c.id !== r.id) throw new Error(`chunk id ${c.id} differs from ${r.id}`);
    if (!Array.isArray(c.choices)) throw new Error('a chunk without choices');
    if (c.choices.length === 0) {
      if (!c.usage) throw new Error('a chunk with no choice and no usage');
      r.usage_chunks++;
      r.usage = c.usage;
      continue;
    }
    const ch = c.choices[0];
    if (ch.delta && ch.delta.role !== undefined) {
      if (ch.delta.role !== 'assistant' || ch.delta.content !== '')
        throw new Error(`unexpected role chunk ${JSON.stringify(ch)}`);
      r.role_chunks++;
      continue;
    }
    const text = ch.delta ? ch.delta.content : ch.text;
    if (typeof text !== 'string') throw new Error(`a content chunk without text: ${JSON.stringify(c)}`);
    r.content_chunks++;
    r.text_words += words(text);
    if (ch.finish_reason) r.finish_reason = ch.finish_reason;
  }
  return r;
}

async function sdk(baseURL, model, kind, maxTokens, out) {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const common = { model, max_tokens: Number(maxTokens), stream: true,
                   stream_options: { include_usage: true }, ignore_eos: true };
  const stream = kind === 'chat'
    ? await client.chat.completions.create({ ...common,
        messages: [{ role: 'user', content: 'stream me some words please' }] })
    : await client.completions.create({ ...common, prompt: 'stream me some words please' });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);  // the SDK parses every event
  // The SDK consumes [DONE] itself: it ends the iteration only after it.
  fs.writeFileSync(out, JSON.stringify(tally(chunks, true)));
}

function sse(file, out) {
  const body = fs.readFileSync(file, 'utf8');
  const events = body.split('\n\n').filter((e) => e.length > 0);
  const chunks = [];
  let done = false;
  for (const e of events) {
    if (!e.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(e)}`);
    const data = e.slice(6);
    if (done) throw new Error('an event after [DONE]');
    if (data === '[DONE]') { done = true; continue; }
    chunks.push(JSON.parse(data));
  }
  if (!done) throw new Error('the stream did not end with [DONE]');
  fs.writeFileSync(out, JSON.stringify(tally(chunks, done)));
}

function check(trace, results) {
  const byId = new Map();
  for (const line of fs.readFileSync(trace, 'utf8').split('\n')) {
    if (!line) continue;
    const rec = JSON.parse(line);
    byId.set(rec.id, rec);
  }
  let bad = 0;
  for (const f of results) {
    const r = JSON.parse(fs.readFileSync(f, 'utf8'));
    const rec = byId.get(r.id);
    const fail = (why) => { console.log(`FAIL ${f} (${r.id}): ${why}`); bad++; };
    if (!rec) { fail('not in the server trace'); continue; }
    const tokens = rec.chunks.reduce((s, c) => s + c[1], 0);
    if (!r.done) fail('no [DONE]');
    if (r.usage_chunks !== 1) fail(`${r.usage_chunks} usage chunks`);
    if (r.content_chunks !== rec.chunks.length)
      fail(`${r.content_chunks} content chunks, the trace has ${rec.chunks.length}`);
    if (!r.usage || r.usage.completion_tokens !== tokens)
      fail(`usage.completion_tokens ${r.usage && r.usage.completion_tokens}, trace ${tokens}`);
    if (!r.usage || r.usage.prompt_tokens !== rec.prompt_tokens)
      fail(`usage.prompt_tokens ${r.usage && r.usage.prompt_tokens}, trace ${rec.prompt_tokens}`);
    if (r.text_words !== tokens) fail(`${r.text_words} words of text, ${tokens} tokens`);
    if (r.finish_reason !== rec.finish_reason)
      fail(`finish_reason ${r.finish_reason}, trace ${rec.finish_reason}`);
    if (r.id.startsWith('chatcmpl-') && r.role_chunks !== 1) fail(`${r.role_chunks} role chunks`);
    if (!bad) console.log(`ok ${f}: ${r.content_chunks} chunks, ${tokens} tokens, usage matches`);
  }
  if (bad) process.exit(1);
}

const [mode, ...a] = process.argv.slice(2);
try {
  if (mode === 'sdk') await sdk(...a);
  else if (mode === 'sse') sse(...a);
  else if (mode === 'check') check(a[0], a.slice(1));
  else throw new Error(`unknown mode ${mode}`);
} catch (e) {
  console.error(`stream_client ${mode}: ${e.stack || e}`);
  process.exit(1);
}
