// SPDX-License-Identifier: MIT
// node genai_check.js OTLP_JSON KNOWN_JSON [OTLP_PROTOBUF]: tokchron's OTLP export of
// OpenTelemetry's GenAI metrics checked by OpenTelemetry's own JavaScript code (versions pinned
// in package-lock.json). KNOWN_JSON says which export it is (`kind`): "server", the model-server
// metrics of a seeded run under otel_live_options (tokchron_otlp_dump --genai,
// tests/export/otlp_dump.cpp), or "client", tokchron-bench's own export (--otlp FILE).
//  1. the JSON request decoded by the opentelemetry-proto messages that
//     @opentelemetry/otlp-transformer ships and written back unchanged; the protobuf request
//     (when given) decoded by the same messages to every field of the JSON one;
//  2. the metrics exactly the conventions' metrics of that kind, each with the name, unit,
//     instrument (an explicit-bucket Histogram, cumulative, one Metric whose data points are its
//     attribute sets) and recommended bucket boundaries the conventions give
//     (open-telemetry/semantic-conventions-genai/docs/gen-ai/gen-ai-metrics.md at
//     004902b8cb70aa5ae6ca4ae07132b7daabcd3e10, written out below from that document); on every
//     point the required attributes, the run's own (gen_ai.request.model, server.address with
//     server.port as an int), `error.type` on the failed operations' points of the metrics
//     that carry it (one of the values tokchron documents) and on no other, and
//     `gen_ai.token.type` (input, output) on every token-usage point;
//  3. every bucket count, the count and the sum against @opentelemetry/sdk-metrics' own
//     HistogramAccumulation recording, with those boundaries, the samples the run observed
//     for that point's attribute set; the metrics "for successful responses" hold no failed
//     operation's sample.
'use strict';
const path = require('path');
const { checker, loadRequest } = require('./otlp_common');
const sdkDir = path.dirname(require.resolve('@opentelemetry/sdk-metrics/package.json'));
const { HistogramAccumulation } = require(path.join(sdkDir, 'build/src/aggregator/Histogram'));

const { fail, same } = checker('genai_check');

// The conventions (gen-ai-metrics.md at 004902b8): unit, recommended boundaries, whether a
// failed operation's point carries error.type (false: not an attribute of the metric), and the
// attribute that splits the points besides error.type.
const DURATION = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const CONVENTIONS = {
  server: {
    'gen_ai.server.request.duration': { unit: 's', bounds: DURATION, errors: true },
    'gen_ai.server.time_per_output_token': {
      unit: 's', bounds: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5],
      errors: false,
    },
    'gen_ai.server.time_to_first_token': {
      unit: 's',
      bounds: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
      errors: false,
    },
  },
  client: {
    'gen_ai.client.operation.duration': { unit: 's', bounds: DURATION, errors: true },
    'gen_ai.client.token.usage': { unit: '{token}', bounds: TOKENS, errors: false, split: 'gen_ai.token.type' },
    'gen_ai.client.operation.time_to_first_chunk': { unit: 's', bounds: DURATION, errors: false },
    'gen_ai.client.operation.time_per_output_chunk': { unit: 's', bounds: DURATION, errors: false },
  },
};
const REQUIRED = ['gen_ai.operation.name', 'gen_ai.provider.name'];
// The error.type values tokchron documents: the server's (live/presets.hpp
// otel_genai_error_types), tokchron-bench's (docs/tools/tokchron-bench.md: an HTTP status, or
// the failure's kind as the report names it).
const ERROR_TYPES = {
  server: (e) => ['cancelled', '_OTHER', 'timeout', 'rejected'].includes(e),
  client: (e) => /^[1-5][0-9][0-9]$/.test(e) ||
    ['connect', 'tls', 'timeout', 'connection', 'http_status', 'http_framing', 'not_sse',
     'ended_early', 'sse_line', 'sse_too_long', 'sse_json', 'sse_event', 'usage',
     'server_error', 'server_finish', '_OTHER'].includes(e),
};
const TOKEN_TYPES = new Set(['input', 'output']);

// 1. (otlp_common.js).
const { known, back } = loadRequest('genai_check');
const conventions = CONVENTIONS[known.kind];
if (!conventions) fail('known kind', `not server or client: ${known.kind}`);

// An attribute's value as OTLP/JSON carries it: stringValue, intValue (a decimal string).
const valueOf = (a) => ('intValue' in a.value ? Number(a.value.intValue) : a.value.stringValue);

// 2. and 3.
const metrics = back.resourceMetrics[0].scopeMetrics[0].metrics;
same('metric names', metrics.map((m) => m.name).sort(), Object.keys(conventions).sort());
const U = Math.pow(2, -53);
let points = 0;
for (const m of metrics) {
  const c = conventions[m.name];
  const at = `metric ${m.name}`;
  same(`${at} unit`, m.unit, c.unit);
  if (!m.histogram || m.exponentialHistogram) fail(at, 'not an explicit-bucket histogram');
  same(`${at} aggregationTemporality`, m.histogram.aggregationTemporality, 2);
  const want = known.samples[m.name] || {};
  const seen = [];
  for (const p of m.histogram.dataPoints) {
    same(`${at} explicitBounds`, p.explicitBounds, c.bounds);
    const attrs = Object.fromEntries((p.attributes || []).map((a) => [a.key, valueOf(a)]));
    for (const k of REQUIRED) if (!(k in attrs)) fail(`${at} attributes`, `no required ${k}`);
    if ('server.address' in attrs && !Number.isInteger(attrs['server.port']))
      fail(`${at} attributes`, 'server.address without an int server.port (conditionally required)');
    const { 'error.type': error, [c.split || 'error.type']: split, ...common } = attrs;
    same(`${at} attributes`, common, known.attributes);
    if (error !== undefined && !c.errors) fail(`${at} attributes`, `error.type on a metric without it`);
    if (error !== undefined && !ERROR_TYPES[known.kind](error)) fail(`${at} error.type`, `undocumented ${error}`);
    if (c.split && !TOKEN_TYPES.has(split)) fail(`${at} ${c.split}`, `not input or output: ${split}`);
    const key = c.split ? split : error || '';
    if (seen.includes(key)) fail(at, `two points for ${JSON.stringify(key)}`);
    seen.push(key);
    const xs = want[key];
    if (!xs) fail(at, `a point for ${JSON.stringify(key)}, which the run never observed`);
    const acc = new HistogramAccumulation([0, 0], c.bounds, false);
    for (const x of xs) acc.record(x);
    const sdk = acc.toPointValue();
    same(`${at}[${key}] count`, p.count, String(xs.length));
    same(`${at}[${key}] bucketCounts`, p.bucketCounts.map(Number), sdk.buckets.counts);
    let abs = 0;
    for (const x of xs) abs += Math.abs(x);
    const bound = 2 * xs.length * U * abs;
    if (!(Math.abs(p.sum - sdk.sum) <= bound))
      fail(`${at}[${key}] sum`, `${p.sum} vs ${sdk.sum} (bound ${bound})`);
    ++points;
  }
  same(`${at} attribute sets`, seen.slice().sort(), Object.keys(want).sort());
  const split = Object.keys(want).map((k) => `${k || 'success'} ${want[k].length}`).join(', ');
  console.log(`genai_check: ${m.name}: unit ${m.unit}, ${c.bounds.length} boundaries as the ` +
              `conventions recommend, points (${split}) equal to sdk-metrics' HistogramAccumulation`);
}
console.log(`genai_check: ${known.kind} metrics, ${points} data points; ${known.failed} failed ` +
            `operations (error.type on the duration only)`);
