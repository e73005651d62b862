#pragma once
// What makes a file's creation, rename or removal durable, and the error that names the failure.
#include <string>

#include "storage/errc.hpp"

namespace tenure::storage {

// `what path: strerror(errno)`, as no_space when the disk is full.
Status os_error(const std::string& what, const std::string& path);

// Syncs the directory `dir`, so that a rename or an unlink in it survives a crash.
Status sync_directory(const std::string& dir);

// Syncs the directory holding `path`, so that a rename or an unlink there survives a crash.
Status sync_directory_of(const std::string& path);

}  // namespace tenure::storage
