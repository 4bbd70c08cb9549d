// SPDX-License-Identifier: MIT
// node otlp_check.js OTLP_JSON KNOWN_JSON [OTLP_PROTOBUF]: tokchron's OTLP/JSON export
// (tests/export/otlp_dump.cpp), and its OTLP/HTTP protobuf export of the same request when
// given, checked by OpenTelemetry's own JavaScript code (versions pinned in package-lock.json):
//  0. the protobuf bytes decoded by the opentelemetry-proto messages: every field, defaults
//     included and optional fields' presence, equal to the JSON request decoded by the same
//     messages (so everything below, checked on the JSON, holds for the protobuf too);
//  1. decoded by the opentelemetry-proto messages that @opentelemetry/otlp-transformer ships
//     (its generated protobufjs module), and written back: every field of the input must come
//     back unchanged (an unknown field, a wrong type or a 64-bit integer not written as a string
//     would not), then through the protobuf wire format and back, equal again;
//  2. every field against the known data: names, description, unit, resource, scope, point
//     attributes, times, temporality, scale, zero threshold, count, zero count, min, max;
//  3. every bucket against @opentelemetry/sdk-metrics' own index mapping at the export's scale
//     (getMapping(scale).mapToIndex: ExponentMapping at scale <= 0, LogarithmMapping above),
//     exactly; a difference is allowed only at an exact power of two, the case the OpenTelemetry
//     data model names as the one where a mapping may round the other way (none is expected:
//     both mappings special-case it);
//  4. the same samples recorded by sdk-metrics' own ExponentialHistogram aggregation (which
//     picks its own scale): bucket counts equal after both are downscaled to the coarser scale;
//  5. the sum within |s_export - s_naive| <= 2 n 2^-53 sum|x| (see below).
// Prints one line per histogram; exits 1 on the first failure, naming the histogram and field.
'use strict';
const path = require('path');
const { checker, diff, loadRequest } = require('./otlp_common');
const sdkDir = path.dirname(require.resolve('@opentelemetry/sdk-metrics/package.json'));
const { getMapping } = require(path.join(sdkDir, 'build/src/aggregator/exponential-histogram/mapping/getMapping'));
const { ExponentialHistogramAccumulation } = require(path.join(sdkDir, 'build/src/aggregator/ExponentialHistogram'));

const { fail, same } = checker('otlp_check');
// 0. and 1. (otlp_common.js).
const { known, back } = loadRequest('otlp_check');

// 2. Structure and metadata, read from the decoded message (as written back).
const kv = (attrs) => Object.fromEntries((attrs || []).map((a) => [a.key, a.value.stringValue]));
same('resourceMetrics.length', back.resourceMetrics.length, 1);
const rm = back.resourceMetrics[0];
same('resource.attributes', kv(rm.resource.attributes), known.resource);
same('scopeMetrics.length', rm.scopeMetrics.length, 1);
const sm = rm.scopeMetrics[0];
same('scope', { name: sm.scope.name, version: sm.scope.version }, known.scope);
same('metrics.length', sm.metrics.length, known.metrics.length);

const U = Math.pow(2, -53);
sm.metrics.forEach((m, i) => {
  const k = known.metrics[i];
  const at = `metric ${k.name}`;
  same(`${at} name`, m.name, k.name);
  same(`${at} description`, m.description, k.description);
  same(`${at} unit`, m.unit, k.unit);
  if (!m.exponentialHistogram) fail(at, 'no exponentialHistogram');
  same(`${at} aggregationTemporality`, m.exponentialHistogram.aggregationTemporality, known.aggregationTemporality);
  same(`${at} dataPoints.length`, m.exponentialHistogram.dataPoints.length, 1);
  const p = m.exponentialHistogram.dataPoints[0];
  same(`${at} attributes`, kv(p.attributes), k.attributes);
  same(`${at} startTimeUnixNano`, p.startTimeUnixNano, known.startTimeUnixNano);
  same(`${at} timeUnixNano`, p.timeUnixNano, known.timeUnixNano);
  same(`${at} scale`, p.scale ?? 0, k.scale);
  same(`${at} zeroThreshold`, p.zeroThreshold ?? 0, k.zeroThreshold);
  const xs = k.samples;
  const n = xs.length;
  same(`${at} count`, p.count, String(n));
  if (n === 0) {
    for (const f of ['sum', 'min', 'max', 'positive', 'negative'])
      if (f in p) fail(`${at} ${f}`, 'present on an empty histogram');
    console.log(`otlp_check: ${k.name}: empty, no sum/min/max/buckets: ok`);
    return;
  }
  same(`${at} min`, p.min, Math.min(...xs));
  same(`${at} max`, p.max, Math.max(...xs));

  // 3. Buckets by the SDK's own mapping at the export's scale.
  const mapping = getMapping(k.scale);
  const zt = k.zeroThreshold;
  const want = { positive: new Map(), negative: new Map() };
  let zero = 0;
  const where = new Map();  // `${side}:${index}` -> a sample, for the message
  for (const x of xs) {
    const a = Math.abs(x);
    if (a <= zt) { zero += 1; continue; }
    const side = x > 0 ? 'positive' : 'negative';
    const idx = mapping.mapToIndex(a);
    want[side].set(idx, (want[side].get(idx) || 0) + 1);
    where.set(`${side}:${idx}`, x);
  }
  same(`${at} zeroCount`, p.zeroCount, String(zero));
  const got = (side) => {
    const out = new Map();
    const b = p[side];
    if (!b) return out;
    (b.bucketCounts || []).forEach((c, j) => { if (c !== '0') out.set((b.offset ?? 0) + j, Number(c)); });
    return out;
  };
  let powerOfTwoDiffs = 0;
  for (const side of ['positive', 'negative']) {
    const g = got(side), w = want[side];
    for (const idx of new Set([...g.keys(), ...w.keys()])) {
      if ((g.get(idx) || 0) === (w.get(idx) || 0)) continue;
      const x = where.get(`${side}:${idx}`);
      const a = x === undefined ? NaN : Math.abs(x);
      const pow2 = a > 0 && Math.pow(2, Math.round(Math.log2(a))) === a;
      if (pow2) { powerOfTwoDiffs += 1; continue; }
      fail(`${at} ${side} bucket ${idx}`,
           `count ${g.get(idx) || 0}, the SDK's mapping at scale ${k.scale} gives ${w.get(idx) || 0}` +
           (x === undefined ? '' : ` (e.g. sample ${x}, [${mapping.lowerBoundary(idx)}, ${mapping.lowerBoundary(idx + 1)}])`));
    }
  }

  // 4. The SDK's own aggregation of the same samples (|x| > zeroThreshold: the SDK's zero bucket
  // holds 0 only), compared at the coarser of the two scales.
  const acc = new ExponentialHistogramAccumulation([0, 0], 1 << 17, true);
  for (const x of xs) if (Math.abs(x) > zt) acc.record(x);
  const sdk = acc.toPointValue();
  const s = Math.min(sdk.scale, k.scale);
  const down = (offset, counts, from) => {
    const out = new Map();
    counts.forEach((c, j) => {
      if (Number(c) === 0) return;
      const idx = Math.floor((offset + j) / Math.pow(2, from - s));
      out.set(idx, (out.get(idx) || 0) + Number(c));
    });
    return out;
  };
  for (const side of ['positive', 'negative']) {
    const b = p[side] || { offset: 0, bucketCounts: [] };
    const ours = down(b.offset ?? 0, b.bucketCounts || [], k.scale);
    const theirs = down(sdk[side].offset, sdk[side].bucketCounts, sdk.scale);
    const dd = diff(Object.fromEntries([...ours].sort((x, y) => x[0] - y[0])),
                    Object.fromEntries([...theirs].sort((x, y) => x[0] - y[0])), side);
    if (dd) fail(`${at} against sdk-metrics' aggregation at scale ${s}`, dd);
  }

  // 5. The sum. tokchron adds the samples in two interleaved partial sums; the reference here adds
  // them one by one in the same order. Against the exact sum S, a recursive sum of m terms errs by
  // at most (m-1)u sum|x| / (1-(m-1)u) (u = 2^-53, Higham, Accuracy and Stability, 4.2), so the two
  // partial sums and their final addition err by at most n u sum|x| (to first order), the
  // reference by (n-1)u sum|x|, and the two differ by at most (2n-1)u sum|x|; 2n u sum|x| covers
  // the second-order terms for any n < 2^40.
  let naive = 0, abs = 0;
  for (const x of xs) { naive += x; abs += Math.abs(x); }
  const bound = 2 * n * U * abs;
  const err = Math.abs(p.sum - naive);
  if (!(err <= bound)) fail(`${at} sum`, `${p.sum} vs ${naive}: |diff| ${err} > bound ${bound}`);
  console.log(`otlp_check: ${k.name}: scale ${k.scale}, n ${n}, zero ${zero}, ` +
              `${want.positive.size}+${want.negative.size} buckets equal to the SDK mapping` +
              (powerOfTwoDiffs ? ` (${powerOfTwoDiffs} at powers of two)` : '') +
              `, equal to sdk-metrics' aggregation at scale ${s} (its own: ${sdk.scale}), ` +
              `sum |diff| ${err.toExponential(2)} <= ${bound.toExponential(2)}`);
});
console.log('otlp_check: all fields round-tripped and checked');
