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
const path = require('path');
const { checker, loadRequest } = require('./otlp_common');
const sdkDir = path.dirname(require.resolve('@opentelemetry/sdk-metrics/package.json'));
const { HistogramAccumulation } = require(path.join(sdkDir, 'build/src/aggregator/Histogram'));

const { fail, same } = checker('genai_check');

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

// 1. (otlp_common.js).
const { known, back } = loadRequest('genai_check');

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
