// What the two SQLite stores (JobStore, store.cc; ObservationStore,
// observations.cc) share: opening the service database, running SQL text with
// SQLite's message on failure, and a prepared statement that finalizes itself.
#pragma once

#include <string>

#include "util/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpucast::service {

// Owns a prepared statement.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt();
};

// Opens, or creates, the database at `path` for reading and writing, with a 5 s
// busy timeout; the caller closes it. Error: "<path>: cannot open database:
// <SQLite's reason>".
Result<sqlite3*> OpenDatabase(const std::string& path);

// Runs `sql` (one or more statements). Error: SQLite's message ("unknown
// error" when it gives none), for the caller to prefix.
Status ExecSql(sqlite3* db, const char* sql);

}  // namespace gpucast::service
