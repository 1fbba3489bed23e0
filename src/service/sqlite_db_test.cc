// The SQLite pieces the job and observation stores share; the stores' own
// messages around them (a path, a table) are checked here too.
#include "service/sqlite_db.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "service/observations.h"
#include "service/service_fixture.h"
#include "service/store.h"

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SqliteDbTest, OpenCreatesAndExecReportsSqlitesMessage) {
  auto db = OpenDatabase(dir_ + "/a.db");
  ASSERT_TRUE(db.ok()) << db.message();
  EXPECT_TRUE(fs::exists(dir_ + "/a.db"));
  EXPECT_TRUE(ExecSql(*db, "CREATE TABLE t (a INTEGER)").ok());
  EXPECT_EQ(ExecSql(*db, "CREATE TABLE t (a INTEGER)").message(), "table t already exists");
  EXPECT_EQ(ExecSql(*db, "BOGUS").message(), "near \"BOGUS\": syntax error");
  {
    Stmt st;
    ASSERT_EQ(sqlite3_prepare_v2(*db, "SELECT a FROM t", -1, &st.s, nullptr), SQLITE_OK);
  }
  // sqlite3_close refuses (SQLITE_BUSY) while a statement is not finalized: Stmt finalized its own.
  EXPECT_EQ(sqlite3_close(*db), SQLITE_OK);
}

TEST_F(SqliteDbTest, MessagesNameTheFile) {
  const std::string missing = dir_ + "/no/such/dir/jobs.db";
  EXPECT_EQ(OpenDatabase(missing).message(), missing + ": cannot open database: unable to open database file");
  EXPECT_EQ(JobStore::Open(missing).message(), missing + ": cannot open database: unable to open database file");
  EXPECT_EQ(ObservationStore::Open(missing).message(),
            missing + ": cannot open database: unable to open database file");
  // A file that is not a database opens (SQLite reads lazily) and fails on its first statement.
  const std::string text = dir_ + "/text.db";
  std::ofstream(text) << std::string(4096, 'x');
  EXPECT_EQ(JobStore::Open(text).message(), text + ": file is not a database");
  EXPECT_EQ(ObservationStore::Open(text).message(), text + ": observations table: file is not a database");
}

}  // namespace
}  // namespace gpucast::service
