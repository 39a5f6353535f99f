#pragma once
// Attributes as h5py and h5dump show them best: text as variable-length
// UTF-8 strings (h5py gives str, and numpy arrays of str for lists),
// integers as native integers, flags as h5py's boolean enum (FALSE/TRUE).

#include "store/hdf5_handles.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::store {

void write_string_attribute(hid_t object, const std::string& name, std::string_view value, const Hdf5Errors& errors);
void write_strings_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values,
                             const Hdf5Errors& errors);
void write_int_attribute(hid_t object, const std::string& name, std::int64_t value, hid_t file_type,
                         const Hdf5Errors& errors);
void write_bool_attribute(hid_t object, const std::string& name, bool value, const Hdf5Errors& errors);

// nullopt when the attribute does not exist. Text may be fixed-length or
// variable-length (files written by other tools).
std::optional<std::string> read_string_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors);
std::optional<std::vector<std::string>> read_strings_attribute(hid_t object, const std::string& name,
                                                               const Hdf5Errors& errors);
std::optional<std::int64_t> read_int_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors);
std::optional<bool> read_bool_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors);

}  // namespace memsweep::store
