/* Scenario files of `infermeter run` (docs/scenarios.md): a JSON object
 * whose keys are run's long option names and whose values are what the flag
 * would take. One table of options serves both, so a scenario can say
 * exactly what the command line can, and nothing else. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/run_cli.h"

const char *im__run_scenario_arg(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--"))
      break;
    if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
      return argv[i + 1];
    if (!strncmp(argv[i], "--scenario=", 11))
      return argv[i] + 11;
  }
  return NULL;
}

static const struct option *find_option(const char *name) {
  for (const struct option *op = im__run_options; op->name; op++)
    if (!strcmp(op->name, name))
      return op;
  return NULL;
}

static bool path_setting(const char *name) {
  return !strcmp(name, "dataset-path") || !strcmp(name, "tokenizer") ||
         !strcmp(name, "api-key-file");
}

/* Applies one value (not an array) of key. */
static int apply_value(struct im_run_config *o, const char *path, const struct option *op,
                       json_t *v, json_t *keep) {
  char text[4096];
  const char *arg = NULL;
  if (op->has_arg == no_argument) {
    if (!json_is_boolean(v)) {
      fprintf(stderr, "infermeter run: %s: \"%s\" is a switch: true or false\n", path, op->name);
      return -1;
    }
    return json_is_true(v) ? im__run_apply(o, op->val, NULL) : 0;
  }
  if (json_is_string(v)) {
    arg = json_string_value(v);
  } else if (json_is_integer(v)) {
    snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    arg = text;
  } else if (json_is_real(v)) {
    im_arg_fmt_double(text, sizeof text, json_real_value(v));
    arg = text;
  } else if (json_is_boolean(v)) {
    arg = json_is_true(v) ? "on" : "off";
  } else {
    fprintf(stderr, "infermeter run: %s: \"%s\" needs a string, a number or a list of them\n",
            path, op->name);
    return -1;
  }
  /* A file named in a scenario is relative to the scenario's folder. */
  if (path_setting(op->name) && arg[0] != '/' && strrchr(path, '/')) {
    size_t dir = (size_t)(strrchr(path, '/') - path);
    char joined[sizeof text];
    /* arg may be text itself (a number given as a file name): join apart. */
    if (dir + 1 + strlen(arg) >= sizeof joined) {
      fprintf(stderr, "infermeter run: %s: \"%s\": path too long\n", path, op->name);
      return -1;
    }
    memcpy(joined, path, dir + 1);
    memcpy(joined + dir + 1, arg, strlen(arg) + 1);
    memcpy(text, joined, dir + 2 + strlen(arg));
    arg = text;
  }
  if (arg == text) { /* options keep the pointer: the text must live on */
    json_t *str = json_string(text);
    if (!str || json_array_append_new(keep, str))
      return -1;
    arg = json_string_value(str);
  }
  if (im__run_apply(o, op->val, arg)) {
    fprintf(stderr, "infermeter run: %s: in \"%s\"\n", path, op->name);
    return -1;
  }
  return 0;
}

int im__run_scenario_load(struct im_run_config *o, const char *path, json_t **keep) {
  json_error_t jerr;
  *keep = NULL;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    if (jerr.line <= 0)
      fprintf(stderr, "infermeter run: --scenario: cannot read %s: %s\n", path, jerr.text);
    else
      fprintf(stderr, "infermeter run: %s:%d:%d: %s\n", path, jerr.line, jerr.column, jerr.text);
    return -1;
  }
  if (!json_is_object(root)) {
    fprintf(stderr, "infermeter run: %s: a scenario is a JSON object of settings\n", path);
    json_decref(root);
    return -1;
  }
  json_t *arr = json_array();
  if (!arr || json_array_append_new(arr, root)) {
    json_decref(arr);
    return -1;
  }
  o->applying_scenario = true;
  const char *key;
  json_t *v;
  int rc = 0;
  json_object_foreach(root, key, v) {
    /* Words for the people who read the file. */
    if (!strcmp(key, "description") || !strcmp(key, "name") || key[0] == '#')
      continue;
    const struct option *op = find_option(key);
    if (!op || op->val == 'h' || !strcmp(key, "scenario")) {
      fprintf(stderr, "infermeter run: %s: unknown setting \"%s\" (settings are the long "
                      "options of infermeter run --help, without the dashes)\n", path, key);
      rc = -1;
      break;
    }
    if (json_is_array(v)) {
      size_t i;
      json_t *e;
      json_array_foreach(v, i, e) {
        if ((rc = apply_value(o, path, op, e, arr)))
          break;
      }
    } else {
      rc = apply_value(o, path, op, v, arr);
    }
    if (rc)
      break;
  }
  o->applying_scenario = false;
  if (rc) {
    json_decref(arr);
    return -1;
  }
  *keep = arr;
  return 0;
}
