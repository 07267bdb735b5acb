// The table of config keys and the typed scalar parsing shared by the YAML
// loader (train/config/config.cpp) and the DeepSpeed import (train/deepspeed/deepspeed_import.cpp).
//
// Every key is one row: section, name (= the struct field's name), a typed
// pointer into a Config, the allowed range and what it means. Loading, overrides, validation
// and printing all walk this one table, so a key cannot be known to one and
// missing from another.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "data/input/input_scalar.h"
#include "train/config/config.h"

namespace zt {

using FieldRef =
    std::variant<int*, int64_t*, uint64_t*, double*, bool*, std::string*, DeepSpeedRelease*>;

struct ConfigKey {
  const char* section;
  const char* name;
  FieldRef (*field)(Config&);
  Range range;
  const char* meaning;  // one line, for the generated config reference
  std::string path() const { return std::string(section) + "." + name; }
};

const std::vector<ConfigKey>& config_keys();
const std::vector<std::string>& config_sections();
const ConfigKey* find_config_key(const std::string& section, const std::string& name);

// " (did you mean 'stage'?)" or " (did you mean 'train.lr'?)" for an unknown
// key, "" when nothing is close.
std::string suggest_key(const std::string& section, const std::string& name);
// The same for an unknown section name (which may also be a misplaced key).
std::string suggest_section(const std::string& name);
// The same rule over any list of names (DeepSpeed's keys, say): " (did you
// mean 'X'?)" for the closest of `known`, "" when none is close.
std::string suggest_name(const std::string& typed, const std::vector<std::string>& known);

// Sets the key's field from a YAML node; returns "" on success, else what went
// wrong, e.g. "expected an integer, got '1.5'".
std::string assign_from_yaml(const ConfigKey& key, Config& c, const YAML::Node& value);
// "'abc'", "a map", "a sequence", "nothing (null)": for "got ..." messages.
std::string describe_node(const YAML::Node& value);
// "expected an integer >= 1, got 0" when the field is outside key.range, else "".
std::string check_range(const ConfigKey& key, Config& c);

// The kind of value a key holds: "integer", "non-negative integer", "number",
// "boolean" or "string" (the config reference's type column; errors add an article).
const char* field_type(const FieldRef& field);

// The field's value as YAML text (strings double-quoted).
std::string field_to_yaml(FieldRef field);

}  // namespace zt
