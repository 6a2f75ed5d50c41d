#!/usr/bin/env python3
"""Writes deploy/grafana/infermeter.json, the Grafana dashboard of an
infermeter run (deploy/README.md). Edit this file, not the JSON, then run
  python3 deploy/grafana/make_dashboard.py
tests/deploy/test_dashboard.sh checks that the JSON is what this script
writes; tests/e2e/test_prometheus.sh evaluates every expression against a
live run in Prometheus.

Rows: one per blind spot of the seed, then the standard vLLM rows over the
target's own metrics (vLLM V1 names, docs/server-metrics.md).
Every ratio divides by `(denominator > 0)`: a zero denominator drops the
point (no data) instead of drawing NaN or +Inf.
Variables: job (infermeter's scrape job), server_job (the target's), model
(the target's model_name label), datasource.
"""
import json
import os

IM = 'job=~"$job"'
SV = 'job=~"$server_job",model_name=~"$model"'
RI = '$__rate_interval'


def ratio(num, den):
    return f'({num}) / (({den}) > 0)'


def q(expr, legend, fmt=None):
    t = {'expr': expr, 'legendFormat': legend, 'datasource': {'type': 'prometheus', 'uid': '${datasource}'}}
    if fmt:
        t['format'] = fmt
    return t


def hq(p, metric, sel, by=''):
    return f'histogram_quantile({p}, sum by (le{by}) (rate({metric}_bucket{{{sel}}}[{RI}])))'


ROWS = [
    ('Effective vs raw request rate (docs/metrics.md section 3)', [
        ('Raw and effective requests/s', 'timeseries', 'reqps', [
            q(f'sum(rate(infermeter_requests_total{{{IM}}}[{RI}]))', 'raw'),
            q(f'sum(rate(infermeter_requests_total{{{IM},kind!~"retry|health|probe"}}[{RI}]))', 'effective'),
        ]),
        ('Effective share of raw', 'timeseries', 'percentunit', [
            q(ratio(f'sum(rate(infermeter_requests_total{{{IM},kind!~"retry|health|probe"}}[{RI}]))',
                    f'sum(rate(infermeter_requests_total{{{IM}}}[{RI}]))'), 'effective / raw'),
        ]),
        ('Requests/s by kind, status and error', 'timeseries', 'reqps', [
            q(f'sum by (kind, status, error) (rate(infermeter_requests_total{{{IM}}}[{RI}]))',
              '{{kind}} {{status}} {{error}}'),
        ]),
    ]),
    ('Token latency: distribution and segmented windows (section 4)', [
        ('Inter-token gaps (heat map)', 'heatmap', 's', [
            q(f'sum by (le) (rate(infermeter_itl_seconds_bucket{{{IM}}}[{RI}]))', '{{le}}', 'heatmap'),
        ]),
        ('Segmented windows: mean gap of 8 (heat map)', 'heatmap', 's', [
            q(f'sum by (le) (rate(infermeter_itl_window_mean_seconds_bucket{{{IM}}}[{RI}]))', '{{le}}',
              'heatmap'),
        ]),
        ('Client latency quantiles', 'timeseries', 's', [
            q(hq(0.5, 'infermeter_ttft_seconds', IM), 'TTFT p50'),
            q(hq(0.99, 'infermeter_ttft_seconds', IM), 'TTFT p99'),
            q(hq(0.99, 'infermeter_tpot_seconds', IM), 'TPOT p99'),
            q(hq(0.99, 'infermeter_itl_seconds', IM), 'ITL p99 (alert: 1.2 s)'),
            q(hq(0.99, 'infermeter_itl_window_mean_seconds', IM), 'window mean p99'),
            q(hq(0.99, 'infermeter_e2el_seconds', IM), 'E2EL p99'),
        ]),
    ]),
    ('KV cache usage vs prefix hit rate (section 5)', [
        ('KV usage and prefix hit rate', 'timeseries', 'percentunit', [
            q(f'max(vllm:kv_cache_usage_perc{{{SV}}})', 'KV usage (server)'),
            q(ratio(f'sum(rate(vllm:prefix_cache_hits_total{{{SV}}}[{RI}]))',
                    f'sum(rate(vllm:prefix_cache_queries_total{{{SV}}}[{RI}]))'), 'prefix hit rate (server)'),
            q(f'max(infermeter_server_kv_cache_usage{{{IM}}})', 'KV usage (as infermeter scraped it)'),
            q(ratio(f'sum(rate(infermeter_cached_tokens_total{{{IM}}}[{RI}]))',
                    f'sum(rate(infermeter_input_tokens_total{{{IM}}}[{RI}]))'), 'cached prompt share (client)'),
        ]),
        ('Preemptions/s', 'timeseries', 'short', [
            q(f'sum(rate(vllm:num_preemptions_total{{{SV}}}[{RI}]))', 'preemptions'),
        ]),
    ]),
    ('TCP states toward the target', [
        ('TIME_WAIT and ESTABLISHED', 'timeseries', 'short', [
            q(f'sum(infermeter_tcp_time_wait{{{IM}}})', 'TIME_WAIT'),
            q(f'sum(infermeter_tcp_established{{{IM}}})', 'ESTABLISHED'),
        ]),
        ('TIME_WAIT growth/s (alert: 5)', 'timeseries', 'short', [
            q(f'sum(deriv(infermeter_tcp_time_wait{{{IM}}}[1m]))', 'd/dt TIME_WAIT'),
        ]),
    ]),
    ('Temperature and top_p vs latency (section 6)', [
        ('Mean E2EL by temperature band', 'timeseries', 's', [
            q(ratio(f'sum by (band) (rate(infermeter_temperature_e2el_seconds_total{{{IM}}}[{RI}]))',
                    f'sum by (band) (rate(infermeter_temperature_requests_total{{{IM}}}[{RI}]))'),
              'temperature {{band}}'),
        ]),
        ('Mean output tokens by top_p band', 'timeseries', 'short', [
            q(ratio(f'sum by (band) (rate(infermeter_top_p_output_tokens_total{{{IM}}}[{RI}]))',
                    f'sum by (band) (rate(infermeter_top_p_requests_total{{{IM}}}[{RI}]))'),
              'top_p {{band}}'),
        ]),
    ]),
    ('MoE expert load', [
        ('Expert imbalance by layer (max / mean tokens per expert, heat map)', 'heatmap', 'short', [
            q('max by (layer) (infermeter_sim_expert_imbalance{job=~"$server_job"})', '{{layer}}'),
        ]),
        ('Experts touched and skewness', 'timeseries', 'short', [
            q('avg(infermeter_sim_experts_touched{job=~"$server_job"})', 'experts touched'),
            q('avg(infermeter_sim_expert_skewness{job=~"$server_job"})', 'skewness'),
        ]),
    ]),
    ('Bandwidth utilisation (section 9)', [
        ('GPU DRAM active (dcgm-exporter)', 'timeseries', 'percentunit', [
            q('avg by (gpu) (DCGM_FI_PROF_DRAM_ACTIVE)', 'GPU {{gpu}}'),
        ]),
        ('GPU memory used', 'timeseries', 'percentunit', [
            q(ratio('sum by (gpu) (DCGM_FI_DEV_FB_USED)',
                    'sum by (gpu) (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)'), 'GPU {{gpu}}'),
        ]),
        ('HBM bandwidth utilisation (infermeter serve, simulated)', 'timeseries', 'percentunit', [
            q('max(infermeter_sim_hbm_bandwidth_utilization{job=~"$server_job"})', 'simulated'),
        ]),
    ]),
    ('The load tester itself (section 10)', [
        ('Dispatch and receive lag', 'timeseries', 's', [
            q(hq(0.99, 'infermeter_dispatch_lag_seconds', IM), 'dispatch lag p99'),
            q(f'max(infermeter_dispatch_lag_max_seconds{{{IM}}})', 'dispatch lag max (1 s)'),
            q(f'max(infermeter_receive_lag_max_seconds{{{IM}}})', 'receive lag max (1 s)'),
            q(f'max(infermeter_dispatch_late_limit_seconds{{{IM}}})', 'limit L'),
        ]),
        ('Late dispatch share (alert: 1 %)', 'timeseries', 'percentunit', [
            q(ratio(f'sum(rate(infermeter_dispatched_late_total{{{IM}}}[{RI}]))',
                    f'sum(rate(infermeter_dispatch_lag_seconds_count{{{IM}}}[{RI}]))'), 'late share'),
        ]),
        ('In flight, queued, client verdict', 'timeseries', 'short', [
            q(f'sum(infermeter_in_flight{{{IM}}})', 'in flight'),
            q(f'sum(infermeter_queued{{{IM}}})', 'queued (--max-concurrency)'),
            q(f'min(infermeter_client_valid{{{IM}}})', 'self-check so far (1 pass)'),
        ]),
    ]),
    ('vLLM: latency quantiles (server)', [
        ('TTFT', 'timeseries', 's', [
            q(hq(0.5, 'vllm:time_to_first_token_seconds', SV), 'p50'),
            q(hq(0.99, 'vllm:time_to_first_token_seconds', SV), 'p99'),
        ]),
        ('Inter-token latency', 'timeseries', 's', [
            q(hq(0.5, 'vllm:inter_token_latency_seconds', SV), 'p50'),
            q(hq(0.99, 'vllm:inter_token_latency_seconds', SV), 'p99'),
        ]),
        ('Queue time', 'timeseries', 's', [
            q(hq(0.99, 'vllm:request_queue_time_seconds', SV), 'p99'),
        ]),
    ]),
    ('vLLM: throughput (server)', [
        ('Tokens/s', 'timeseries', 'short', [
            q(f'sum(rate(vllm:prompt_tokens_total{{{SV}}}[{RI}]))', 'prompt'),
            q(f'sum(rate(vllm:generation_tokens_total{{{SV}}}[{RI}]))', 'generation'),
            q(f'sum(rate(infermeter_output_tokens_total{{{IM}}}[{RI}]))', 'output (client)'),
        ]),
        ('Requests finished/s', 'timeseries', 'reqps', [
            q(f'sum by (finished_reason) (rate(vllm:request_success_total{{{SV}}}[{RI}]))',
              '{{finished_reason}}'),
        ]),
    ]),
    ('vLLM: queue (server)', [
        ('Running and waiting requests', 'timeseries', 'short', [
            q(f'sum(vllm:num_requests_running{{{SV}}})', 'running'),
            q(f'sum(vllm:num_requests_waiting{{{SV}}})', 'waiting'),
            q(f'sum(infermeter_server_requests_waiting{{{IM}}})', 'waiting (as infermeter scraped it)'),
        ]),
    ]),
]


def variable(name, label, query):
    return {'name': name, 'label': label, 'type': 'query', 'query': {'query': query, 'refId': name},
            'definition': query, 'datasource': {'type': 'prometheus', 'uid': '${datasource}'},
            'includeAll': True, 'multi': True, 'allValue': '.*', 'refresh': 2,
            'current': {'text': 'All', 'value': '$__all'}}


def build():
    panels, y, pid = [], 0, 1
    for title, row in ROWS:
        panels.append({'type': 'row', 'title': title, 'id': pid, 'collapsed': False,
                       'gridPos': {'x': 0, 'y': y, 'w': 24, 'h': 1}, 'panels': []})
        pid += 1
        y += 1
        w = 24 // len(row)
        for i, (ptitle, ptype, unit, targets) in enumerate(row):
            for k, t in enumerate(targets):
                t['refId'] = chr(ord('A') + k)
            p = {'type': ptype, 'title': ptitle, 'id': pid,
                 'datasource': {'type': 'prometheus', 'uid': '${datasource}'},
                 'gridPos': {'x': i * w, 'y': y, 'w': w, 'h': 8},
                 'fieldConfig': {'defaults': {'unit': unit}, 'overrides': []},
                 'targets': targets}
            if ptype == 'heatmap':
                p['options'] = {'calculate': False, 'yAxis': {'unit': unit},
                                'cellGap': 1, 'color': {'scheme': 'Oranges', 'mode': 'scheme'}}
            panels.append(p)
            pid += 1
        y += 8
    return {
        'title': 'infermeter: LLM inference load test',
        'uid': 'infermeter',
        'description': 'An infermeter run (--metrics-listen) and its target. deploy/README.md.',
        'tags': ['infermeter', 'llm', 'vllm'],
        'schemaVersion': 39,
        'version': 1,
        'editable': True,
        'refresh': '5s',
        'time': {'from': 'now-15m', 'to': 'now'},
        'timezone': 'utc',
        'templating': {'list': [
            {'name': 'datasource', 'label': 'Prometheus', 'type': 'datasource', 'query': 'prometheus',
             'current': {}},
            variable('job', 'infermeter job', 'label_values(infermeter_requests_total, job)'),
            variable('server_job', 'server job', 'label_values(vllm:num_requests_running, job)'),
            variable('model', 'model', 'label_values(vllm:num_requests_running{job=~"$server_job"}, model_name)'),
        ]},
        'annotations': {'list': []},
        'panels': panels,
    }


if __name__ == '__main__':
    import sys
    out = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), 'infermeter.json')
    with open(out, 'w') as f:
        json.dump(build(), f, indent=2, sort_keys=True)
        f.write('\n')
