/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.c: bearer tokens. A token is "gpa_" and 32 random bytes in URL-safe
 * base64; the store keeps only its BLAKE2b-256 hash (a fast hash is right
 * for high-entropy secrets: there is nothing to brute-force). The caller a
 * token stands for (user, admin flag, role bindings) is cached per token
 * hash and thrown away whenever users, tokens, bindings, organizations or
 * projects change (api->generation), so revocation takes effect at once.
 *
 * Also the hooks of the tokens resource: a new token's secret is made here
 * and shown once, in the create's answer; a deleted token is revoked, kept
 * for the audit trail.
 */
#include "base/common.h"

#include <microhttpd.h>
#include <sodium.h>

#include "api/api-int.h"

#define TOKEN_RANDOM_BYTES 32
#define AUTH_CACHE_SLOTS 4096

struct cache_entry {
    char hash[TOKEN_HASH_HEX + 1];
    uint64_t generation;
    struct principal who; /* bindings on the heap, owned by the entry */
};

struct auth_cache {
    pthread_mutex_t lock;
    struct cache_entry *slots[AUTH_CACHE_SLOTS];
};

struct auth_cache *auth_cache_new(void)
{
    struct auth_cache *c = xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void entry_free(struct cache_entry *e)
{
    if (!e)
        return;
    free(e->who.bindings);
    free(e);
}

void auth_cache_free(struct auth_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++)
        entry_free(c->slots[i]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void auth_token_hash(const char *token, char ret_hash[TOKEN_HASH_HEX + 1])
{
    unsigned char h[32];
    crypto_generichash(h, sizeof(h), (const unsigned char *)token, strlen(token), NULL, 0);
    sodium_bin2hex(ret_hash, TOKEN_HASH_HEX + 1, h, sizeof(h));
}

void auth_token_new(char **ret_token, char ret_hash[TOKEN_HASH_HEX + 1], char ret_prefix[16])
{
    unsigned char raw[TOKEN_RANDOM_BYTES];
    char b64[sodium_base64_ENCODED_LEN(TOKEN_RANDOM_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];

    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    *ret_token = xasprintf(TOKEN_PREFIX "%s", b64);
    auth_token_hash(*ret_token, ret_hash);
    snprintf(ret_prefix, 16, "%.12s", *ret_token);
    sodium_memzero(raw, sizeof(raw));
}

/* The slot of a hash: its first hex digits are already uniformly random. */
static size_t slot_of(const char *hash)
{
    size_t v = 0;
    for (int i = 0; i < 6; i++)
        v = v * 16 + (size_t)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
    return v % AUTH_CACHE_SLOTS;
}

static void copy_principal(struct arena *a, const struct principal *src, struct principal *dst)
{
    *dst = *src;
    dst->bindings = arena_calloc(a, src->n_bindings, sizeof(struct binding));
    if (src->n_bindings)
        memcpy(dst->bindings, src->bindings, src->n_bindings * sizeof(struct binding));
}

static bool cache_lookup(struct req *r, const char *hash, struct principal *ret)
{
    struct auth_cache *c = r->api->auth;
    uint64_t gen = atomic_load(&r->api->generation);
    bool hit = false;
    struct cache_entry *e;

    pthread_mutex_lock(&c->lock);
    e = c->slots[slot_of(hash)];
    if (e && e->generation == gen && strcmp(e->hash, hash) == 0 &&
        (e->who.token_expires_at == 0 || e->who.token_expires_at > r->now)) {
        copy_principal(&r->arena, &e->who, ret);
        hit = true;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

static void cache_store(struct req *r, const char *hash, uint64_t gen, const struct principal *who)
{
    struct auth_cache *c = r->api->auth;
    struct cache_entry *e = xcalloc(1, sizeof(*e));
    size_t slot = slot_of(hash);

    snprintf(e->hash, sizeof(e->hash), "%s", hash);
    e->generation = gen;
    e->who = *who;
    e->who.bindings = xcalloc(who->n_bindings, sizeof(struct binding));
    if (who->n_bindings)
        memcpy(e->who.bindings, who->bindings, who->n_bindings * sizeof(struct binding));
    pthread_mutex_lock(&c->lock);
    entry_free(c->slots[slot]);
    c->slots[slot] = e;
    pthread_mutex_unlock(&c->lock);
}

static int load_principal(struct req *r, const char *hash, struct principal *who,
                          struct error_info *ei)
{
    struct store_conn *db = req_db(r);
    struct store_filter f;
    struct row *rows, user;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_TOKENS_HASH, hash);
    f.limit = 1;
    rc = store_list(db, &model_tokens, &f, &r->arena, &rows, &n, ei);
    if (rc < 0)
        return rc;
    if (n == 0)
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "unknown token");
    if (!row_is_null(&rows[0], F_TOKENS_REVOKED_AT))
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "token has been revoked");
    {
        const struct value *exp = row_get(&rows[0], F_TOKENS_EXPIRES_AT);
        if (!exp->null && exp->i <= r->now)
            return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "token has expired");
        who->token_expires_at = exp->null ? 0 : exp->i;
    }
    who->token_id = model_row_id(&rows[0]);
    who->user_id = row_int(&rows[0], F_TOKENS_USER_ID);
    snprintf(who->token_hash, sizeof(who->token_hash), "%s", hash);
    rc = store_get(db, &model_users, who->user_id, &r->arena, &user, ei);
    if (rc == ERR_NOT_FOUND)
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "the token's user no longer exists");
    if (rc < 0)
        return rc;
    if (row_int(&user, F_USERS_DISABLED))
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "user is disabled");
    snprintf(who->name, sizeof(who->name), "%s", row_get(&user, F_USERS_NAME)->s);

    store_filter_init(&f);
    store_filter_eq_int(&f, F_ROLE_BINDINGS_USER_ID, who->user_id);
    rc = store_list_all(db, &model_role_bindings, &f, &r->arena, &rows, &n, ei); /* every one */
    if (rc < 0)
        return rc;
    who->bindings = arena_calloc(&r->arena, n, sizeof(struct binding));
    who->n_bindings = n;
    for (size_t i = 0; i < n; i++) {
        struct binding *b = &who->bindings[i];
        const struct value *org = row_get(&rows[i], F_ROLE_BINDINGS_ORG_ID);
        const struct value *prj = row_get(&rows[i], F_ROLE_BINDINGS_PROJECT_ID);
        role_parse(row_get(&rows[i], F_ROLE_BINDINGS_ROLE)->s, &b->role);
        b->org_id = org->null ? 0 : org->i;
        b->project_id = prj->null ? 0 : prj->i;
        if (b->role == ROLE_ADMIN)
            who->admin = true;
    }
    return 0;
}

int auth_authenticate(struct req *r, struct error_info *ei)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    char hash[TOKEN_HASH_HEX + 1];

    if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7])
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL,
                           "missing bearer token: send 'Authorization: Bearer <token>'");
    h += 7;
    if (strncmp(h, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) != 0 || strlen(h) > 128)
        return errinfo_set(ei, ERR_UNAUTHENTICATED, NULL, "malformed token");
    auth_token_hash(h, hash);
    return auth_by_hash(r, hash, ei);
}

int auth_by_hash(struct req *r, const char *hash, struct error_info *ei)
{
    struct principal *who;
    uint64_t gen;
    int rc;

    who = arena_alloc(&r->arena, sizeof(*who));
    if (!cache_lookup(r, hash, who)) {
        /* Read the generation first: a change during the load makes the entry stale. */
        gen = atomic_load(&r->api->generation);
        rc = load_principal(r, hash, who, ei);
        if (rc < 0)
            return rc;
        cache_store(r, hash, gen, who);
    }
    r->who = who;
    return 0;
}

/* ---- the tokens resource ---- */

static int token_fill(struct req *r, struct row *row, json_t **ret_reveal, struct error_info *ei)
{
    char hash[TOKEN_HASH_HEX + 1], prefix[16], *token;
    int uid = F_TOKENS_USER_ID;
    const struct value *exp = row_get(row, F_TOKENS_EXPIRES_AT);

    if (!row->v[uid].set || row->v[uid].null)
        row_set_int(row, uid, r->who->user_id);
    if (exp->set && !exp->null && exp->i <= r->now)
        return errinfo_set(ei, ERR_INVALID, "expires_at", "expires_at is in the past");
    auth_token_new(&token, hash, prefix);
    row_set_str(row, &r->arena, F_TOKENS_HASH, hash);
    row_set_str(row, &r->arena, F_TOKENS_PREFIX, prefix);
    row_set_null(row, F_TOKENS_REVOKED_AT);
    *ret_reveal = json_pack("{s:s}", "token", token);
    free(token);
    return 0;
}

/* Tokens are revoked, not erased, so the audit trail keeps what they were. */
static int token_retire(struct req *r, const struct row *before, struct row *after,
                        struct error_info *ei)
{
    const struct value *revoked = row_get(before, F_TOKENS_REVOKED_AT);

    if (revoked->set && !revoked->null)
        return errinfo_set(ei, ERR_CONFLICT, NULL, "token %" PRId64 " is already revoked",
                           model_row_id(before));
    row_set_int(after, F_TOKENS_REVOKED_AT, r->now);
    return 0;
}

const struct resource_hooks auth_token_hooks = {
    .identity = true,
    .fill = token_fill,
    .retire = token_retire,
    .retire_verb = "revoke",
    .retired = "revoked",
    .reveal = {"token", "string", "the secret, shown only in this answer"},
};
