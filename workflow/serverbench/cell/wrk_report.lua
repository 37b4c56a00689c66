-- wrk's text report rounds every figure; this prints the exact totals as one
-- JSON line so each number in a result can be traced to the raw output.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'SERVERBENCH_WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.3f,"stdev":%.3f,' ..
    '"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev,
    latency:percentile(50), latency:percentile(75), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9)))
end
