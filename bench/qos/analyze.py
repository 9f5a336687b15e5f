#!/usr/bin/env python3
"""analyze.py: the figures of the QoS acceptance runs (bench/qos/acceptance.sh)
from qosload's per-process logs ("UNIXTIME COUNT [ONCPU_NS RUNQ_NS]" lines,
"done T").

  analyze.py static LIMIT LOG...             10 s windows, the first dropped
  analyze.py change FROM TO AT PERIOD LOG... seconds until the new rate holds
  analyze.py share CAPACITY PERIOD SPEC...   the PSFA scenario; SPEC is
        NAME:DEMAND:ARRIVE:IDLE_AT:IDLE_FOR:LOG[,LOG...] (times in seconds
        from the first job's start); optional first arguments
        records=CSV:JOBID,... (qosd's records) and machine=LOG (acceptance.sh's
        per-second samples of /proc/loadavg and /proc/stat)
Prints one JSON object.

A share run is invalid, whatever its figures, when the machine starved a
job: in a second the figures count, the job's unhindered rate (what its
processes did per second they were running or waiting for a CPU, i.e. not
held back by QoS nor pacing themselves; summed over them) was below
STARVED x its max-min entitlement. No controller could then have met the
goal (0.9 x the entitlement) in that second, so the run measures the
machine, not the controller."""
import json
import sys

# A second is starved when a job's unhindered rate is below this share of
# its entitlement: the goal's own threshold (acceptance 3: each job >= 0.9 x
# min(demand, fair share)).
STARVED = 0.9


def unhindered(count, oncpu, runq):
    """A process's rate in a second with nothing holding it back: its count
    over the time it was running or waiting for a CPU. A process that did
    nothing could run at any rate unless it waited for a CPU most of the
    second."""
    want = (oncpu + runq) / 1e9
    if count:
        return count / want if want > 0 else float('inf')
    return 0.0 if want >= 0.5 else float('inf')


def read(paths, first_done=None, unh=None):
    """Per-second sums of the processes' logs, the first second, and when
    the last process was done; first_done (a list) gets when the first one
    was, unh (a dict) the per-second sums of the processes' unhindered rates
    (seconds without scheduler times are left out)."""
    per_s, done, first, dones = {}, 0.0, None, []
    for p in paths:
        with open(p) as f:
            for line in f:
                a = line.split()
                if not a:
                    continue
                if a[0] == 'done':
                    done = max(done, float(a[1]))
                    dones.append(float(a[1]))
                    continue
                t, n = int(a[0]), int(a[1])
                per_s[t] = per_s.get(t, 0) + n
                if unh is not None and len(a) >= 4:
                    unh[t] = unh.get(t, 0.0) + unhindered(n, int(a[2]), int(a[3]))
                first = t if first is None else min(first, t)
    if first_done is not None:
        first_done.append(min(dones) if dones else done)
    return per_s, first, done


def static(limit, paths):
    per_s, first, _ = read(paths)
    last = max(per_s)
    windows = []
    # Whole seconds only: the first and last second of a run are partial.
    for a in range(first + 1, last - 9, 10):
        windows.append(sum(per_s.get(t, 0) for t in range(a, a + 10)) / 10.0)
    kept = windows[1:]
    dev = [w / limit - 1 for w in kept]
    return {'windows': [round(w, 1) for w in windows], 'kept': len(kept),
            'worst_deviation': round(max(dev, key=abs), 4) if dev else None}


def change(old, new, at, period, paths):
    per_s, first, _ = read(paths)
    # The first whole second from which every second holds the new rate
    # within 5%, counted from the second the change was made in.
    secs = sorted(t for t in per_s if t >= int(at))
    reached = None
    for i, t in enumerate(secs):
        tail = secs[i:i + 3]
        if len(tail) == 3 and all(abs(per_s[u] / new - 1) <= 0.05 for u in tail):
            reached = t
            break
    before = [per_s[t] for t in per_s if int(at) - 6 <= t < int(at) - 1]
    return {'before': round(sum(before) / max(len(before), 1), 1),
            'seconds_to_new_rate': None if reached is None else reached + 1 - at,
            'periods': None if reached is None else round((reached + 1 - at) / period, 2)}


def maxmin(capacity, demands):
    alloc, left, active = {}, capacity, sorted(demands, key=lambda k: demands[k])
    for i, k in enumerate(active):
        share = left / (len(active) - i)
        alloc[k] = min(demands[k], share)
        left -= alloc[k]
    return alloc


def allocations(path, ids, names):
    # qosd's records: for each job (ids in the order of names), the stat
    # allocations with the time each was set.
    out = {n: [] for n in names}
    by_id = dict(zip(ids, names))
    with open(path) as f:
        for line in f:
            a = line.strip().split(',')
            if len(a) < 8 or a[0] == 'time' or a[3] != 'stat' or a[2] not in by_id or not a[6]:
                continue
            out[by_id[a[2]]].append((float(a[0]), float(a[6])))
    return out


def alloc_at(allocs, t):
    # The allocation in force for most of the second [t, t + 1).
    v = None
    for at, a in allocs:
        if at > t + 0.5:
            break
        v = a
    return v


def machine(path, t0, end):
    """The machine while the jobs ran, from lines "UNIXTIME LOAD1 RUNNABLE
    cpu USER NICE SYSTEM IDLE IOWAIT IRQ SOFTIRQ STEAL ...": the load
    average, the runnable threads, the share of CPU time stolen by the
    hypervisor and the share taken by niced processes (builds)."""
    rows = []
    with open(path) as f:
        for line in f:
            a = line.split()
            if len(a) >= 12 and a[3] == 'cpu':
                rows.append((int(a[0]), float(a[1]), int(a[2]), [int(x) for x in a[4:]]))
    rows = [r for r in rows if t0 <= r[0] <= end]
    if len(rows) < 2:
        return None
    steal, nice = [], []
    for (_, _, _, c0), (_, _, _, c1) in zip(rows, rows[1:]):
        d = [y - x for x, y in zip(c0, c1)]
        total = sum(d[:8]) or 1
        steal.append(d[7] / total)
        nice.append(d[1] / total)

    def summary(v, digits):
        v = sorted(v)
        return {'min': round(v[0], digits), 'median': round(v[len(v) // 2], digits),
                'max': round(v[-1], digits)}
    return {'load1': summary([r[1] for r in rows], 2),
            'runnable': summary([r[2] for r in rows], 0),
            'steal_share': summary(steal, 3), 'nice_share': summary(nice, 3)}


def share(capacity, period, specs):
    records = machine_log = None
    while specs and '=' in specs[0].split(':', 1)[0]:
        key, value = specs[0].split('=', 1)
        if key == 'records':
            path, ids = value.rsplit(':', 1)
            records = (path, ids.split(','))
        elif key == 'machine':
            machine_log = value
        specs = specs[1:]
    jobs = {}
    for spec in specs:
        name, demand, arrive, idle_at, idle_for, logs = spec.split(':', 5)
        first_done, unh = [], {}
        per_s, first, done = read(logs.split(','), first_done, unh)
        jobs[name] = {'demand': float(demand), 'per_s': per_s, 'first': first, 'done': done,
                      'first_done': first_done[0], 'idle': (float(idle_at), float(idle_for)),
                      'unhindered': unh}
    # Where each idling really began and ended: the first second from
    # about its nominal start in which the job did under half its demand,
    # and the first after that in which it did half again.
    for j in jobs.values():
        ia, ifor = j['idle']
        j['idle_span'] = None
        if ia < 0:
            continue
        t = j['first'] + int(ia) - 2
        while t < j['done'] and j['per_s'].get(t, 0) >= j['demand'] / 2:
            t += 1
        e = t + 1
        while e < j['done'] and j['per_s'].get(e, 0) < j['demand'] / 2:
            e += 1
        j['idle_span'] = (t, e)
    t0 = min(j['first'] for j in jobs.values())
    end = int(max(j['done'] for j in jobs.values()))
    over = []
    fair, jain_values, worst, worst_at = [], [], 1e9, None
    worst_alloc, worst_alloc_at = 1e9, None
    allocs = allocations(records[0], records[1], list(jobs)) if records else None
    # When the set of jobs asking changes (one arrives, finishes, goes idle
    # or comes back), the controller needs up to 2 periods to follow:
    # those seconds are left out of the fairness figures (not of the sum).
    # A job's processes each do a fixed count of calls, and under
    # contention they need not finish together: from the first one done the
    # job asks less than its demand, and it finishes (left out until its
    # last one is done, and 2 periods after).
    starved_at, unh_ratios = [], {k: [] for k in jobs}

    def starved(t, ent):
        # The jobs the machine held below what the goal asks of the
        # controller in second t (ent: their entitlements).
        for k, e in ent.items():
            u = jobs[k]['unhindered'].get(t)
            if u is None:
                continue
            unh_ratios[k].append(u / e)
            if u < STARVED * e:
                starved_at.append({'t': t - t0, 'job': k, 'unhindered_over_entitled': round(u / e, 3)})
    events, finishing = [], []
    for j in jobs.values():
        events += [j['first'], int(j['done'])]
        finishing.append((int(j['first_done']), int(j['done'])))
        if j['idle_span']:
            events += list(j['idle_span'])
    for t in range(t0 + 1, end):
        total = sum(j['per_s'].get(t, 0) for j in jobs.values())
        over.append(total / capacity)
        if any(e - 1 <= t < e + 2 * period for e in events):
            continue
        if any(a - 1 <= t < b for a, b in finishing):
            continue
        active = {}
        for k, j in jobs.items():
            if t < j['first'] or t >= int(j['done']):
                continue
            if j['idle_span'] and j['idle_span'][0] <= t < j['idle_span'][1]:
                continue
            active[k] = j['demand']
        if len(active) < 2 or sum(active.values()) <= capacity:
            continue
        # Contention: each job's entitlement is its max-min share.
        ent = maxmin(capacity, active)
        starved(t, ent)
        ratios = [jobs[k]['per_s'].get(t, 0) / ent[k] for k in active]
        jain = sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios))
        jain_values.append(jain)
        for k, r in zip(active, ratios):
            if r < worst:
                worst, worst_at = r, {'t': t - t0, 'job': k}
        if allocs:
            # What qosd allocated against the entitlement: the controller's
            # part, apart from what the node let the job's processes do.
            for k in active:
                a = alloc_at(allocs[k], t)
                if a is not None and a / ent[k] < worst_alloc:
                    worst_alloc, worst_alloc_at = a / ent[k], {'t': t - t0, 'job': k}
        fair.append({'t': t - t0, **{k: round(r, 3) for k, r in zip(active, ratios)}})
    # A job going idle: the others' sum in the 2 periods after.
    reaction = []
    for k, j in jobs.items():
        if not j['idle_span']:
            continue
        # s: the first second the job was idle (it stopped within it or
        # just before); the others' sum from 2 periods after its start.
        s, e = j['idle_span']
        after = []
        for t in range(s + int(2 * period), e - 1):
            after.append(sum(o['per_s'].get(t, 0) for n, o in jobs.items() if n != k) / capacity)
            others = {n: o['demand'] for n, o in jobs.items()
                      if n != k and o['first'] <= t < int(o['done'])}
            starved(t, maxmin(capacity, others))
        reaction.append({'job': k, 'idle_seconds': [s - t0, e - t0],
                         'others_over_capacity_after_2_periods':
                         round(min(after), 3) if after else None})
    jain_values.sort()
    unh_summary = {}
    for k, v in unh_ratios.items():
        if v:
            v = sorted(v)
            unh_summary[k] = {'min': round(v[0], 3), 'median': round(v[len(v) // 2], 3)}
    return {'valid': (not starved_at) if any(unh_ratios.values()) else None,
            'starved_seconds': starved_at[:10], 'starved_count': len(starved_at),
            'unhindered_over_entitled': unh_summary,
            'machine': machine(machine_log, t0, end) if machine_log else None,
            'capacity': capacity, 'max_over_capacity': round(max(over), 4),
            'idle_reaction': reaction,
            'contention_seconds': len(jain_values),
            'worst_achieved_over_entitled': round(worst, 3) if jain_values else None,
            'worst_at': worst_at,
            'worst_allocated_over_entitled': round(worst_alloc, 3) if allocs and worst_alloc_at else None,
            'worst_allocated_at': worst_alloc_at,
            'jain_median': round(jain_values[len(jain_values) // 2], 4) if jain_values else None,
            'jain_min': round(jain_values[0], 4) if jain_values else None,
            'makespan_s': round(max(j['done'] for j in jobs.values()) - t0, 1)}


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == 'static':
        out = static(float(args[0]), args[1:])
    elif kind == 'change':
        out = change(float(args[0]), float(args[1]), float(args[2]), float(args[3]), args[4:])
    else:
        out = share(float(args[0]), float(args[1]), args[2:])
    print(json.dumps(out))


main()
