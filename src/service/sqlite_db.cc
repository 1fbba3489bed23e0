#include "service/sqlite_db.h"

#include <sqlite3.h>

namespace gpucast::service {

Stmt::~Stmt() { sqlite3_finalize(s); }

Result<sqlite3*> OpenDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Error(path + ": cannot open database: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

Status ExecSql(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::Error(msg);
  }
  return Status::Ok();
}

}  // namespace gpucast::service
