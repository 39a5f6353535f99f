#include "store/attributes.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep::store {
namespace {

TypeHandle variable_string_type(const Hdf5Errors& errors) {
  TypeHandle type(errors.check(H5Tcopy(H5T_C_S1), "copy the string type"));
  errors.check(H5Tset_size(type.get(), H5T_VARIABLE), "make a variable-length string type");
  errors.check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "set a string type's character set");
  return type;
}

// h5py reads an 8-bit enum of exactly FALSE = 0 and TRUE = 1 as numpy.bool_.
TypeHandle bool_type(const Hdf5Errors& errors) {
  TypeHandle type(errors.check(H5Tenum_create(H5T_NATIVE_INT8), "create the boolean enum type"));
  const std::int8_t no = 0;
  const std::int8_t yes = 1;
  errors.check(H5Tenum_insert(type.get(), "FALSE", &no), "add FALSE to the boolean enum type");
  errors.check(H5Tenum_insert(type.get(), "TRUE", &yes), "add TRUE to the boolean enum type");
  return type;
}

void write_attribute(hid_t object, const std::string& name, hid_t type, hid_t space, const void* data,
                     const Hdf5Errors& errors) {
  const AttributeHandle attribute(errors.check(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                                               fmt::format("create attribute {}", name)));
  errors.check(H5Awrite(attribute.get(), type, data), fmt::format("write attribute {}", name));
}

std::optional<AttributeHandle> open_if_present(hid_t object, const std::string& name, const Hdf5Errors& errors) {
  if (errors.check(H5Aexists(object, name.c_str()), fmt::format("look for attribute {}", name)) == 0)
    return std::nullopt;
  return AttributeHandle(
      errors.check(H5Aopen(object, name.c_str(), H5P_DEFAULT), fmt::format("open attribute {}", name)));
}

// Text of any string attribute, scalar or 1-D.
std::vector<std::string> read_text(const AttributeHandle& attribute, const std::string& name,
                                   const Hdf5Errors& errors) {
  const std::string attempted = fmt::format("read attribute {}", name);
  const TypeHandle stored(errors.check(H5Aget_type(attribute.get()), attempted));
  if (H5Tget_class(stored.get()) != H5T_STRING) errors.fail_plain(fmt::format("attribute {} is not text", name));
  const SpaceHandle space(errors.check(H5Aget_space(attribute.get()), attempted));
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points < 0) errors.fail(attempted);
  const auto count = static_cast<std::size_t>(points);
  std::vector<std::string> values;
  values.reserve(count);
  if (count == 0) return values;

  if (errors.check(H5Tis_variable_str(stored.get()), attempted) > 0) {
    const TypeHandle in_memory = variable_string_type(errors);
    std::vector<char*> pointers(count, nullptr);
    errors.check(H5Aread(attribute.get(), in_memory.get(), pointers.data()), attempted);
    for (const char* text : pointers) values.emplace_back(text != nullptr ? text : "");
    H5Dvlen_reclaim(in_memory.get(), space.get(), H5P_DEFAULT, pointers.data());
    return values;
  }
  const std::size_t width = H5Tget_size(stored.get());
  if (width == 0) errors.fail(attempted);  // 0 is also how H5Tget_size reports a failure
  const TypeHandle in_memory(errors.check(H5Tcopy(stored.get()), attempted));
  std::vector<char> bytes(width * count);
  errors.check(H5Aread(attribute.get(), in_memory.get(), bytes.data()), attempted);
  for (std::size_t i = 0; i < count; ++i) {
    std::string_view text(bytes.data() + i * width, width);
    text = text.substr(0, std::min(text.find('\0'), text.size()));
    if (H5Tget_strpad(stored.get()) == H5T_STR_SPACEPAD) text = text.substr(0, text.find_last_not_of(' ') + 1);
    values.emplace_back(text);
  }
  return values;
}

}  // namespace

void write_string_attribute(hid_t object, const std::string& name, std::string_view value, const Hdf5Errors& errors) {
  const TypeHandle type = variable_string_type(errors);
  const SpaceHandle space(errors.check(H5Screate(H5S_SCALAR), "create a scalar dataspace"));
  const std::string text(value);
  const char* pointer = text.c_str();
  write_attribute(object, name, type.get(), space.get(), &pointer, errors);
}

void write_strings_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values,
                             const Hdf5Errors& errors) {
  const TypeHandle type = variable_string_type(errors);
  const hsize_t count = values.size();
  // An empty list is a 1-D dataspace of 0 elements (h5py: an empty array),
  // not a null dataspace, so readers need no special case.
  const SpaceHandle space(errors.check(H5Screate_simple(1, &count, nullptr), "create a 1-D dataspace"));
  std::vector<const char*> pointers;
  pointers.reserve(values.size() + 1);
  for (const std::string& value : values) pointers.push_back(value.c_str());
  pointers.push_back(nullptr);  // H5Awrite wants a buffer even for 0 elements
  write_attribute(object, name, type.get(), space.get(), pointers.data(), errors);
}

void write_int_attribute(hid_t object, const std::string& name, std::int64_t value, hid_t file_type,
                         const Hdf5Errors& errors) {
  const SpaceHandle space(errors.check(H5Screate(H5S_SCALAR), "create a scalar dataspace"));
  const AttributeHandle attribute(
      errors.check(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                   fmt::format("create attribute {}", name)));
  errors.check(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), fmt::format("write attribute {}", name));
}

void write_bool_attribute(hid_t object, const std::string& name, bool value, const Hdf5Errors& errors) {
  const TypeHandle type = bool_type(errors);
  const SpaceHandle space(errors.check(H5Screate(H5S_SCALAR), "create a scalar dataspace"));
  const std::int8_t stored = value ? 1 : 0;
  write_attribute(object, name, type.get(), space.get(), &stored, errors);
}

std::optional<std::string> read_string_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors) {
  const std::optional<AttributeHandle> attribute = open_if_present(object, name, errors);
  if (!attribute) return std::nullopt;
  std::vector<std::string> values = read_text(*attribute, name, errors);
  if (values.size() != 1) errors.fail_plain(fmt::format("attribute {} holds {} strings, not one", name, values.size()));
  return std::move(values.front());
}

std::optional<std::vector<std::string>> read_strings_attribute(hid_t object, const std::string& name,
                                                               const Hdf5Errors& errors) {
  const std::optional<AttributeHandle> attribute = open_if_present(object, name, errors);
  if (!attribute) return std::nullopt;
  return read_text(*attribute, name, errors);
}

std::optional<std::int64_t> read_int_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors) {
  const std::optional<AttributeHandle> attribute = open_if_present(object, name, errors);
  if (!attribute) return std::nullopt;
  const std::string attempted = fmt::format("read attribute {}", name);
  const TypeHandle stored(errors.check(H5Aget_type(attribute->get()), attempted));
  const SpaceHandle space(errors.check(H5Aget_space(attribute->get()), attempted));
  if (H5Tget_class(stored.get()) != H5T_INTEGER || H5Sget_simple_extent_npoints(space.get()) != 1)
    errors.fail_plain(fmt::format("attribute {} is not one integer", name));
  std::int64_t value = 0;
  errors.check(H5Aread(attribute->get(), H5T_NATIVE_INT64, &value), attempted);
  return value;
}

std::optional<bool> read_bool_attribute(hid_t object, const std::string& name, const Hdf5Errors& errors) {
  const std::optional<AttributeHandle> attribute = open_if_present(object, name, errors);
  if (!attribute) return std::nullopt;
  const TypeHandle type = bool_type(errors);
  std::int8_t value = 0;
  errors.check(H5Aread(attribute->get(), type.get(), &value), fmt::format("read attribute {}", name));
  return value != 0;
}

}  // namespace memsweep::store
