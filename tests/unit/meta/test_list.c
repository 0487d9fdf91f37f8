/*
 * test_list.c - listing against a reference: 2,500 keys (some overwritten,
 * some hidden by delete markers) in a versioned bucket, paged with several
 * page sizes, with prefixes, delimiters and start_after, compared entry by
 * entry with a sorted list computed here; and version listings paged with
 * version_id_marker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>

#include "meta_test_util.h"

#define NKEYS 2500

static char *keys[NKEYS];
static bool deleted[NKEYS];

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct ent {
    char key[STRATA_KEY_MAX + 1];
    bool is_prefix;
};

struct collect {
    struct ent *e;
    size_t n, cap;
    char vids[64][48];
    bool latest[64];
    bool marker[64];
};

static int collect_cb(const struct strata_list_entry *le, void *ud)
{
    struct collect *c = ud;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->e = realloc(c->e, c->cap * sizeof(*c->e));
    }
    snprintf(c->e[c->n].key, sizeof(c->e[c->n].key), "%s", le->key);
    c->e[c->n].is_prefix = le->is_prefix;
    if (!le->is_prefix && c->n < 64) {
        snprintf(c->vids[c->n], 48, "%s", le->info->version_id);
        c->latest[c->n] = le->info->is_latest;
        c->marker[c->n] = le->info->delete_marker;
    }
    c->n++;
    return 0;
}

static void reference(const char *prefix, const char *delim, const char *after,
                      struct collect *out)
{
    size_t pl = strlen(prefix);
    char last_cp[STRATA_KEY_MAX + 1] = "";
    for (size_t i = 0; i < NKEYS; i++) {
        const char *k = keys[i];
        if (deleted[i] || strncmp(k, prefix, pl) != 0)
            continue;
        if (after && strcmp(k, after) <= 0)
            continue;
        const char *d = delim ? strstr(k + pl, delim) : NULL;
        struct strata_list_entry le = {0};
        struct strata_obj_info fake;
        char cp[STRATA_KEY_MAX + 1];
        if (d) {
            size_t cl = (size_t)(d - k) + strlen(delim);
            memcpy(cp, k, cl);
            cp[cl] = 0;
            if ((after && strcmp(cp, after) <= 0) || strcmp(cp, last_cp) == 0)
                continue;
            strcpy(last_cp, cp);
            le.is_prefix = true;
            le.key = cp;
        } else {
            memset(&fake, 0, sizeof(fake));
            le.info = &fake;
            le.key = k;
        }
        collect_cb(&le, out);
    }
}

static void paged(struct mt_env *e, const char *prefix, const char *delim, const char *after,
                  unsigned max, struct collect *out)
{
    char marker[STRATA_KEY_MAX + 1] = "";
    if (after)
        snprintf(marker, sizeof(marker), "%s", after);
    for (int guard = 0; guard < 100000; guard++) {
        struct strata_list_opts o = {.bucket = "l", .prefix = prefix, .delimiter = delim,
                                     .start_after = marker[0] ? marker : NULL, .max_keys = max};
        struct strata_list_result res;
        size_t before = out->n;
        assert_int_equal(strata_obj_list(e->m, &o, collect_cb, out, &res), 0);
        assert_true(out->n - before <= max);
        if (!res.truncated)
            return;
        assert_int_equal(out->n - before, max);
        assert_string_equal(res.next_key, out->e[out->n - 1].key);
        snprintf(marker, sizeof(marker), "%s", res.next_key);
    }
    fail();
}

static void compare(const struct collect *a, const struct collect *b)
{
    for (size_t i = 0; i < a->n && i < b->n; i++)
        if (strcmp(a->e[i].key, b->e[i].key) != 0) {
            print_error("first difference at %zu: got %s want %s\n", i, a->e[i].key,
                        b->e[i].key);
            break;
        }
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->e[i].key, b->e[i].key);
        assert_int_equal(a->e[i].is_prefix, b->e[i].is_prefix);
    }
}

struct loader {
    struct mt_env *e;
    int from, step;
};

static void *load(void *arg)
{
    struct loader *l = arg;
    for (int i = l->from; i < NKEYS; i += l->step) {
        char body[64];
        int n = snprintf(body, sizeof(body), "body-%d", i);
        if (mt_put(l->e, "l", keys[i], body, (size_t)n, NULL) != 0)
            abort();
        if (i % 7 == 0 && mt_put(l->e, "l", keys[i], body, (size_t)n - 1, NULL) != 0)
            abort(); /* a second version */
        if (deleted[i] && strata_obj_delete(l->e->m, "l", keys[i], NULL, NULL) != 0)
            abort();
    }
    return NULL;
}

static void test_list_reference(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("list");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "l", STRATA_VERSIONING_ENABLED), 0);
    for (int i = 0; i < NKEYS; i++) {
        char k[128];
        int x = (i * 7919) % 10000;
        switch (i % 6) {
        case 0: snprintf(k, sizeof(k), "photos/2024/img%04d.jpg", x); break;
        case 1: snprintf(k, sizeof(k), "photos/2025/%04d", x); break;
        case 2: snprintf(k, sizeof(k), "docs/readme%04d", x); break;
        case 3: snprintf(k, sizeof(k), "top%04d", x); break;
        case 4: snprintf(k, sizeof(k), "photos/raw%04d", x); break;
        default: snprintf(k, sizeof(k), "a%04d/b/c", x); break;
        }
        keys[i] = strdup(k);
        deleted[i] = i % 11 == 3;
    }
    qsort(keys, NKEYS, sizeof(keys[0]), cmpstr);
    pthread_t t[8];
    struct loader ls[8];
    for (int i = 0; i < 8; i++) {
        ls[i] = (struct loader){e, i, 8};
        pthread_create(&t[i], NULL, load, &ls[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);

    struct {
        const char *prefix, *delim, *after;
    } cases[] = {
        {"", NULL, NULL},          {"", "/", NULL},           {"photos/", "/", NULL},
        {"photos/", NULL, NULL},   {"photos/2024/", "/", NULL}, {"", "/", "photos/"},
        {"", NULL, "photos/2024/img5"}, {"a", "/", "a0500"},  {"docs/", "/", "docs/readme9"},
        {"nothing", NULL, NULL},   {"", "/b/", NULL},         {"photos/", "2", NULL},
    };
    unsigned pages[] = {1000, 333, 7};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct collect ref = {0};
        reference(cases[c].prefix, cases[c].delim, cases[c].after, &ref);
        for (size_t p = 0; p < 3; p++) {
            if (pages[p] == 7 && ref.n > 700)
                continue; /* keep runtime modest */
            struct collect got = {0};
            print_message("case %zu page %u\n", c, pages[p]);
            paged(e, cases[c].prefix, cases[c].delim, cases[c].after, pages[p], &got);
            compare(&got, &ref);
            free(got.e);
        }
        free(ref.e);
    }
    /* Sanity of the reference itself: hidden keys are really hidden. */
    struct collect all = {0};
    reference("", NULL, NULL, &all);
    size_t live = 0;
    for (int i = 0; i < NKEYS; i++)
        live += !deleted[i];
    assert_int_equal(all.n, live);
    free(all.e);
    /* max_keys 0 lists nothing; an unknown bucket is ENOTFOUND. */
    struct collect none = {0};
    struct strata_list_result res;
    struct strata_list_opts o = {.bucket = "l", .max_keys = 0};
    assert_int_equal(strata_obj_list(e->m, &o, collect_cb, &none, &res), 0);
    assert_int_equal(none.n, 0);
    assert_false(res.truncated);
    o.bucket = "nob";
    o.max_keys = 10;
    assert_int_equal(strata_obj_list(e->m, &o, collect_cb, &none, &res), STRATA_ENOTFOUND);
    for (int i = 0; i < NKEYS; i++)
        free(keys[i]);
    mt_teardown(e);
}

static void test_list_versions(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("listv");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "l", 0), 0);
    /* k0: null version (pre-versioning), then two versions and a marker. */
    assert_int_equal(mt_put(e, "l", "k0", "n", 1, NULL), 0);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "l", STRATA_VERSIONING_ENABLED), 0);
    char vids[8][48];
    int nv = 0;
    struct strata_obj_info out;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mt_put(e, "l", "k0", "v", 1, &out), 0);
        snprintf(vids[nv++], 48, "%s", out.version_id);
        strata_obj_info_fini(&out);
    }
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "l", "k0", NULL, &dr), 0);
    assert_int_equal(mt_put(e, "l", "k1", "x", 1, &out), 0);
    strata_obj_info_fini(&out);

    struct collect full = {0};
    struct strata_list_result res;
    struct strata_list_opts o = {.bucket = "l", .max_keys = 1000, .versions = true};
    assert_int_equal(strata_obj_list(e->m, &o, collect_cb, &full, &res), 0);
    assert_false(res.truncated);
    assert_int_equal(full.n, 5);
    /* k0 newest first: marker, v2, v1, null; then k1. */
    assert_string_equal(full.e[0].key, "k0");
    assert_true(full.marker[0]);
    assert_true(full.latest[0]);
    assert_string_equal(full.vids[0], dr.version_id);
    assert_string_equal(full.vids[1], vids[1]);
    assert_false(full.latest[1]);
    assert_string_equal(full.vids[2], vids[0]);
    assert_string_equal(full.vids[3], "null");
    assert_string_equal(full.e[4].key, "k1");
    assert_true(full.latest[4]);
    /* Without versions the marker hides k0. */
    struct collect cur = {0};
    o.versions = false;
    assert_int_equal(strata_obj_list(e->m, &o, collect_cb, &cur, &res), 0);
    assert_int_equal(cur.n, 1);
    assert_string_equal(cur.e[0].key, "k1");
    /* One version per page through version_id_marker reproduces the list. */
    struct collect pg = {0};
    char km[STRATA_KEY_MAX + 1] = "", vm[STRATA_VERSION_ID_MAX + 1] = "";
    for (int i = 0; i < 10; i++) {
        struct strata_list_opts po = {.bucket = "l", .max_keys = 1, .versions = true,
                                      .start_after = km[0] ? km : NULL,
                                      .version_id_marker = vm[0] ? vm : NULL};
        assert_int_equal(strata_obj_list(e->m, &po, collect_cb, &pg, &res), 0);
        if (!res.truncated)
            break;
        snprintf(km, sizeof(km), "%s", res.next_key);
        snprintf(vm, sizeof(vm), "%s", res.next_version_id);
    }
    assert_int_equal(pg.n, full.n);
    for (size_t i = 0; i < full.n; i++) {
        assert_string_equal(pg.e[i].key, full.e[i].key);
        assert_string_equal(pg.vids[i], full.vids[i]);
        assert_int_equal(pg.latest[i], full.latest[i]);
    }
    free(full.e);
    free(cur.e);
    free(pg.e);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_reference),
        cmocka_unit_test(test_list_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
