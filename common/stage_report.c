#include "stage_report.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_str(json_t *o, const char *key, const char *value)
{
    return json_object_set_new(o, key, value ? json_string(value) : json_null());
}

char *stage_report_encode(const struct stage_report *r)
{
    json_t *o = json_object(), *fails = json_array();
    int bad = !o || !fails;
    bad |= set_str(o, "direction", r->direction);
    bad |= set_str(o, "source", r->source);
    bad |= set_str(o, "destination", r->destination);
    bad |= json_object_set_new(o, "worker", json_integer(r->worker));
    bad |= json_object_set_new(o, "workers", json_integer(r->workers ? r->workers : 1));
#define PUT(name, what) bad |= json_object_set_new(o, #name, json_integer((json_int_t)r->name));
    STAGE_REPORT_COUNTERS(PUT)
#undef PUT
#define PUT(name, what) bad |= json_object_set_new(o, #name, json_real(r->name));
    STAGE_REPORT_FIGURES(PUT)
#undef PUT
    bad |= json_object_set_new(o, "complete", json_boolean(r->complete));
    for (size_t i = 0; !bad && i < r->nfailures; i++) {
        const struct stage_report_failure *f = &r->failures[i];
        json_t *e = json_pack("{s:s?, s:i, s:s?, s:s?}", "path", f->path, "errno", f->err,
                              "error", f->error, "what", f->what);
        bad |= !e || json_array_append_new(fails, e);
    }
    bad |= json_object_set(o, "failures", fails);
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(fails);
    json_decref(o);
    return text;
}

static char *dup_str(const json_t *o, const char *key, bool *ok)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    char *s = json_is_string(v) ? strdup(json_string_value(v)) : NULL;
    if (!s)
        *ok = false;
    return s;
}

static uint64_t get_count(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

int stage_report_decode(const char *text, struct stage_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!o || !json_is_object(o)) {
        snprintf(err, errlen, "not a stage report: %s", o ? "not a JSON object" : je.text);
        json_decref(o);
        return -EBADMSG;
    }
    bool ok = true;
    r->direction = dup_str(o, "direction", &ok);
    r->source = dup_str(o, "source", &ok);
    r->destination = dup_str(o, "destination", &ok);
    r->worker = (unsigned)get_count(o, "worker");
    r->workers = (unsigned)get_count(o, "workers");
#define GET(name, what) r->name = get_count(o, #name);
    STAGE_REPORT_COUNTERS(GET)
#undef GET
#define GET(name, what) r->name = json_number_value(json_object_get(o, #name));
    STAGE_REPORT_FIGURES(GET)
#undef GET
    r->complete = json_is_true(json_object_get(o, "complete"));
    const json_t *fails = json_object_get(o, "failures");
    size_t n = json_is_array(fails) ? json_array_size(fails) : 0;
    r->failures = n ? calloc(n, sizeof(*r->failures)) : NULL;
    if (n && !r->failures)
        ok = false;
    for (size_t i = 0; ok && i < n; i++) {
        const json_t *e = json_array_get(fails, i);
        if (!json_is_object(e))
            continue;
        struct stage_report_failure *f = &r->failures[r->nfailures++];
        f->path = dup_str(e, "path", &ok);
        f->err = (int)get_count(e, "errno");
        f->error = dup_str(e, "error", &ok);
        f->what = dup_str(e, "what", &ok);
    }
    json_decref(o);
    if (!ok) {
        stage_report_free(r);
        snprintf(err, errlen, "out of memory reading a stage report");
        return -ENOMEM;
    }
    return 0;
}

void stage_report_free(struct stage_report *r)
{
    free(r->direction);
    free(r->source);
    free(r->destination);
    for (size_t i = 0; i < r->nfailures; i++) {
        free(r->failures[i].path);
        free(r->failures[i].error);
        free(r->failures[i].what);
    }
    free(r->failures);
    memset(r, 0, sizeof(*r));
}

void stage_report_add(struct stage_report *total, const struct stage_report *w)
{
#define ADD(name, what) total->name += w->name;
    STAGE_REPORT_COUNTERS(ADD)
#undef ADD
    total->idle_seconds += w->idle_seconds;
    total->idle_start_seconds += w->idle_start_seconds;
    if (w->seconds > total->seconds)
        total->seconds = w->seconds;
}
