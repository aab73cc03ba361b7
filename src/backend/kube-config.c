/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-config.c: reads a kubeconfig with libyaml (YAML is what kubectl and
 * every cluster installer write; JSON is YAML too). Only what a client
 * needs to reach the apiserver is taken: the current context's cluster
 * (server, CA) and user (token, token file, client certificate). Users that
 * run credential plugins (exec, auth-provider) are refused with a message:
 * gpuaasd runs no programs a kubeconfig names.
 */
#include "base/common.h"

#include <libgen.h>
#include <sodium.h>
#include <yaml.h>

#include "backend/kube.h"
#include "base/alloc.h"
#include "base/fdio.h"

#define KUBECONFIG_MAX (1024 * 1024)

/* A mapping's value for key, NULL when absent or node is not a mapping. */
static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *node, const char *key)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* A scalar's text (libyaml keeps it NUL-terminated); NULL when not a non-empty scalar. */
static const char *scalar(yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE || node->data.scalar.length == 0)
        return NULL;
    return (const char *)node->data.scalar.value;
}

static const char *map_str(yaml_document_t *d, yaml_node_t *node, const char *key)
{
    return scalar(map_get(d, node, key));
}

/* The entry of list (clusters, users, contexts) whose name is name, its `field` mapping. */
static yaml_node_t *named_entry(yaml_document_t *d, yaml_node_t *root, const char *list,
                                const char *name, const char *field)
{
    yaml_node_t *seq = map_get(d, root, list);
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(d, *it);
        const char *n = map_str(d, e, "name");
        if (n && strcmp(n, name) == 0)
            return map_get(d, e, field);
    }
    return NULL;
}

/* A file name the kubeconfig gives, relative to its directory. */
static char *path_from(const char *dir, const char *name)
{
    return name[0] == '/' ? xstrdup(name) : xasprintf("%s/%s", dir, name);
}

/* Decodes base64 *-data into *ret (NUL-terminated) and *ret_len. */
static int decode(const char *what, const char *b64, char **ret, size_t *ret_len,
                  struct error_info *ei)
{
    size_t cap = strlen(b64) / 4 * 3 + 4, len = 0;
    char *out = xmalloc(cap + 1);

    if (sodium_base642bin((unsigned char *)out, cap, b64, strlen(b64), " \t\r\n", &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(out);
        return errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig: %s is not base64", what);
    }
    out[len] = '\0';
    *ret = out;
    *ret_len = len;
    return 0;
}

void kube_config_free(struct kube_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->token);
    free(c->token_file);
    free(c->cert_file);
    free(c->key_file);
    free(c->cert_data);
    free(c->key_data);
    free(c->context);
    free(c);
}

static int take_cluster(yaml_document_t *d, yaml_node_t *cl, const char *dir, struct kube_config *c,
                        struct error_info *ei)
{
    const char *server = map_str(d, cl, "server"), *v;
    size_t n;
    int rc = 0;

    if (!server)
        return errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig: the cluster has no server");
    if (strncmp(server, "https://", 8) != 0)
        return errinfo_set(ei, ERR_INVALID, "endpoint",
                           "kubeconfig: server %.100s is not https://: tokens are never sent "
                           "in the clear",
                           server);
    c->server = xstrdup(server);
    n = strlen(c->server);
    while (n > 8 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    if ((v = map_str(d, cl, "certificate-authority-data")))
        rc = decode("certificate-authority-data", v, &c->ca_data, &c->ca_len, ei);
    else if ((v = map_str(d, cl, "certificate-authority")))
        c->ca_file = path_from(dir, v);
    v = map_str(d, cl, "insecure-skip-tls-verify");
    c->insecure = v && strcmp(v, "true") == 0;
    return rc;
}

static int take_user(yaml_document_t *d, yaml_node_t *u, const char *dir, struct kube_config *c,
                     struct error_info *ei)
{
    const char *v;
    int rc = 0;

    if (map_get(d, u, "exec") || map_get(d, u, "auth-provider"))
        return errinfo_set(ei, ERR_INVALID, "endpoint",
                           "kubeconfig: the user runs a credential plugin (exec or "
                           "auth-provider), which gpuaasd does not run: give it a token, a "
                           "token file or a client certificate");
    if ((v = map_str(d, u, "token")))
        c->token = xstrdup(v);
    if ((v = map_str(d, u, "tokenFile")))
        c->token_file = path_from(dir, v);
    if ((v = map_str(d, u, "client-certificate-data")))
        rc = decode("client-certificate-data", v, &c->cert_data, &c->cert_len, ei);
    else if ((v = map_str(d, u, "client-certificate")))
        c->cert_file = path_from(dir, v);
    if (rc == 0 && (v = map_str(d, u, "client-key-data")))
        rc = decode("client-key-data", v, &c->key_data, &c->key_len, ei);
    else if (rc == 0 && (v = map_str(d, u, "client-key")))
        c->key_file = path_from(dir, v);
    if (rc < 0)
        return rc;
    if ((c->cert_file || c->cert_data) != (c->key_file || c->key_data))
        return errinfo_set(ei, ERR_INVALID, "endpoint",
                           "kubeconfig: a client certificate needs its key, and a key its "
                           "certificate");
    if (!c->token && !c->token_file && !c->cert_file && !c->cert_data)
        return errinfo_set(ei, ERR_INVALID, "endpoint",
                           "kubeconfig: the user has no token, token file or client "
                           "certificate");
    return 0;
}

static int parse(const char *path, const char *text, size_t len, struct kube_config *c,
                 struct error_info *ei)
{
    yaml_parser_t p;
    yaml_document_t d;
    yaml_node_t *root, *ctx, *cl, *u;
    const char *cur, *cname, *uname;
    char *copy = xstrdup(path), *dir = dirname(copy);
    int rc;

    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &d)) {
        rc = errinfo_set(ei, ERR_INVALID, "endpoint",
                         "kubeconfig %.100s is not YAML: %.80s at line %zu", path,
                         p.problem ? p.problem : "unreadable", p.problem_mark.line + 1);
        yaml_parser_delete(&p);
        free(copy);
        return rc;
    }
    root = yaml_document_get_root_node(&d);
    cur = map_str(&d, root, "current-context");
    if (!cur)
        rc = errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig %.100s has no current-context",
                         path);
    else if (!(ctx = named_entry(&d, root, "contexts", cur, "context")))
        rc = errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig: no context named %.100s", cur);
    else if (!(cname = map_str(&d, ctx, "cluster")) || !(uname = map_str(&d, ctx, "user")))
        rc = errinfo_set(ei, ERR_INVALID, "endpoint",
                         "kubeconfig: context %.100s names no cluster or no user", cur);
    else if (!(cl = named_entry(&d, root, "clusters", cname, "cluster")))
        rc = errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig: no cluster named %.100s", cname);
    else if (!(u = named_entry(&d, root, "users", uname, "user")))
        rc = errinfo_set(ei, ERR_INVALID, "endpoint", "kubeconfig: no user named %.100s", uname);
    else {
        c->context = xstrdup(cur);
        rc = take_cluster(&d, cl, dir, c, ei);
        if (rc == 0)
            rc = take_user(&d, u, dir, c, ei);
    }
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    free(copy);
    return rc;
}

int kube_config_load(const char *path, struct kube_config **ret, struct error_info *ei)
{
    char *text;
    ssize_t len;
    struct kube_config *c;
    int rc;

    *ret = NULL;
    if (!path || !*path)
        return errinfo_set(ei, ERR_INVALID, "endpoint",
                           "a kubernetes cluster's endpoint is the path of its kubeconfig");
    text = xmalloc(KUBECONFIG_MAX + 1);
    len = file_read_small(path, text, KUBECONFIG_MAX + 1);
    if (len < 0 || (size_t)len >= KUBECONFIG_MAX) {
        rc = errinfo_set(ei, ERR_INVALID, "endpoint", "cannot read the kubeconfig %.100s: %s", path,
                         len < 0 ? strerror(errno) : "larger than 1 MiB");
        free(text);
        return rc;
    }
    c = xcalloc(1, sizeof(*c));
    rc = parse(path, text, (size_t)len, c, ei);
    free(text);
    if (rc < 0) {
        kube_config_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}
