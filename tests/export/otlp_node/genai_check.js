// SPDX-License-Identifier: MIT
// node genai_check.js OTLP_JSON KNOWN_JSON [OTLP_PROTOBUF]: tokchron's OTLP export of
// OpenTelemetry's GenAI model-server metrics (tokchron_otlp_dump --genai, tests/export/otlp_dump.cpp)
// checked by OpenTelemetry's own JavaScript code (versions pinned in package-lock.json):
//  1. the JSON request decoded by the opentelemetry-proto messages that
//     @opentelemetry/otlp-transformer ships and written back unchanged; the protobuf request
//     decoded by the same messages to every field of the JSON one;
//  2. the metrics exactly the conventions' three model-server metrics, each with the name, unit,
//     instrument (an explicit-bucket Histogram, cumulative) and recommended bucket boundaries
//     the conventions give (open-telemetry/semantic-conventions-genai/docs/gen-ai/gen-ai-metrics.md
//     at 7269173edd774fb00a9fabc374955e0888714fa7, written out
//     below from that document), and the required attributes (gen_ai.operation.name,
//     gen_ai.provider.name) with gen_ai.request.model;
//  3. every bucket count, the count and min-free sum against @opentelemetry/sdk-metrics' own
//     HistogramAccumulation recording the samples tokchron observed with those boundaries; the
//     samples are of successful responses only (the conventions' "for successful responses"),
//     the dump's failed requests being left out.
'use strict';
const fs = require('fs');
const path = require('path');
const { opentelemetry } = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const sdkDir = path.dirname(require.resolve('@opentelemetry/sdk-metrics/package.json'));
const { HistogramAccumulation } = require(path.join(sdkDir, 'build/src/aggregator/Histogram'));

const Request = opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
const [otlpPath, knownPath, protobufPath] = process.argv.slice(2);
if (!otlpPath || !knownPath) {
  console.error('usage: node genai_check.js OTLP_JSON KNOWN_JSON [OTLP_PROTOBUF]');
  process.exit(2);
}
const input = JSON.parse(fs.readFileSync(otlpPath, 'utf8'));
const known = JSON.parse(fs.readFileSync(knownPath, 'utf8'));
function fail(where, msg) {
  console.error(`genai_check: FAIL ${where}: ${msg}`);
  process.exit(1);
}
function same(where, got, want) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) fail(where, `got ${g}, want ${w}`);
}
// The first path at which a and b differ (keys in any order, types and values), or null.
function diff(a, b, at = '') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a === null || typeof a !== 'object') return Object.is(a, b) ? null : `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  const ka = Object.keys(a), kb = Object.keys(b);
  for (const k of ka) if (!(k in b)) return `${at}.${k}: present in one only`;
  for (const k of kb) if (!(k in a)) return `${at}.${k}: present in one only`;
  for (const k of ka) {
    const d = diff(a[k], b[k], `${at}.${k}`);
    if (d) return d;
  }
  return null;
}

// The conventions (gen-ai-metrics.md at 7269173): name, unit, recommended boundaries.
const CONVENTIONS = {
  'gen_ai.server.request.duration':
    ['s', [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]],
  'gen_ai.server.time_per_output_token':
    ['s', [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5]],
  'gen_ai.server.time_to_first_token':
    ['s', [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]],
};
const REQUIRED = ['gen_ai.operation.name', 'gen_ai.provider.name'];

// 1. Decode, write back, and the protobuf bytes to the same message.
const toJson = { longs: String, enums: Number, json: true, defaults: false };
const withDefaults = { longs: String, enums: Number, json: true, defaults: true };
const message = Request.fromObject(input);
const back = Request.toObject(message, toJson);
const d1 = diff(input, back, 'request');
if (d1) fail('JSON round trip through opentelemetry-proto', d1);
if (protobufPath) {
  const fromPb = Request.decode(fs.readFileSync(protobufPath));
  const d0 = diff(Request.toObject(message, withDefaults), Request.toObject(fromPb, withDefaults), 'request');
  if (d0) fail('OTLP/HTTP protobuf against the JSON request', d0);
  console.log('genai_check: the protobuf request decodes to every field of the JSON request');
}

// 2. and 3.
const metrics = back.resourceMetrics[0].scopeMetrics[0].metrics;
same('metric names', metrics.map((m) => m.name).sort(), Object.keys(CONVENTIONS).sort());
const U = Math.pow(2, -53);
for (const m of metrics) {
  const [unit, bounds] = CONVENTIONS[m.name];
  const at = `metric ${m.name}`;
  same(`${at} unit`, m.unit, unit);
  if (!m.histogram || m.exponentialHistogram) fail(at, 'not an explicit-bucket histogram');
  same(`${at} aggregationTemporality`, m.histogram.aggregationTemporality, 2);
  same(`${at} dataPoints.length`, m.histogram.dataPoints.length, 1);
  const p = m.histogram.dataPoints[0];
  same(`${at} explicitBounds`, p.explicitBounds, bounds);
  const attrs = Object.fromEntries((p.attributes || []).map((a) => [a.key, a.value.stringValue]));
  for (const k of REQUIRED) if (!(k in attrs)) fail(`${at} attributes`, `no required ${k}`);
  same(`${at} attributes`, attrs, known.attributes);
  const xs = known.samples[m.name];
  const acc = new HistogramAccumulation([0, 0], bounds, false);
  for (const x of xs) acc.record(x);
  const sdk = acc.toPointValue();
  same(`${at} count`, p.count, String(xs.length));
  same(`${at} bucketCounts`, p.bucketCounts.map(Number), sdk.buckets.counts);
  let abs = 0;
  for (const x of xs) abs += Math.abs(x);
  const bound = 2 * xs.length * U * abs;
  if (!(Math.abs(p.sum - sdk.sum) <= bound)) fail(`${at} sum`, `${p.sum} vs ${sdk.sum} (bound ${bound})`);
  console.log(`genai_check: ${m.name}: unit ${m.unit}, ${bounds.length} boundaries as the ` +
              `conventions recommend, attributes ${Object.keys(attrs).join(', ')}, ` +
              `${xs.length} samples in buckets equal to sdk-metrics' HistogramAccumulation`);
}
console.log(`genai_check: successful responses only (${known.failed} failed requests left out)`);
