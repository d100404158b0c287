/*
 * The SQL endpoint's guard: SQL client sessions read the warehouse and never write it.
 *
 * A Spark session extension (spark.sql.extensions=lineagewarehouse.sqlendpoint.ReadOnlyClients) that adds a
 * check rule to every session of the JVM. The rule passes every plan of a session registered as a writer (the
 * serve process registers its own session, which ingests and builds) and, in any other session (those the
 * Thrift JDBC/ODBC server opens for its clients), refuses:
 *
 *  - every command but the read-only and session-local ones (ALLOWED_COMMANDS, SHOW ..., DESCRIBE ...):
 *    INSERT, CREATE/DROP/ALTER of tables, views, databases and functions, CTAS, TRUNCATE, LOAD DATA, MSCK,
 *    ANALYZE, CACHE/UNCACHE/CLEAR CACHE, ADD JAR/FILE, INSERT OVERWRITE DIRECTORY, ... ;
 *  - CREATE GLOBAL TEMPORARY VIEW and CREATE TEMPORARY VIEW ... USING (shared, or reading arbitrary sources);
 *  - SET of the endpoint's scheduler pool: a client's statements run in that pool, whatever its session says;
 *  - reads of files by path (SELECT FROM parquet.`/path`): clients read tables;
 *  - SELECT TRANSFORM (runs a program on the server) and reflect/java_method/try_reflect (call Java methods).
 *
 * Fail closed: a command this file does not know is refused. The session-local commands pass: SET and RESET of
 * the session's own settings, USE, temporary views over queries, session variables, EXPLAIN, REFRESH TABLE.
 *
 * Compiled from source by python_jobs/serve/sql_endpoint.py (javac against the installed pyspark's jars).
 */
package lineagewarehouse.sqlendpoint;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.analysis.GlobalTempView$;
import org.apache.spark.sql.catalyst.analysis.LocalTempView$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.command.CreateViewCommand;
import org.apache.spark.sql.execution.command.DropTempViewCommand;
import org.apache.spark.sql.execution.command.SetCommand;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

import scala.Function1;
import scala.Option;
import scala.Tuple2;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

public final class ReadOnlyClients extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

  /** The scheduler pool setting of the Thrift server (SQLConf.THRIFTSERVER_POOL). */
  public static final String POOL_KEY = "spark.sql.thriftserver.scheduler.pool";
  /** The thread-local property naming the pool of the jobs a thread submits (SparkContext.SPARK_SCHEDULER_POOL). */
  private static final String SCHEDULER_POOL = "spark.scheduler.pool";
  private static final String DEFAULT_POOL = "sql";

  private static final String WHERE_WRITES_GO =
      "writes go through ingest and builds: post OpenLineage events to the collector (POST /api/v1/lineage) "
          + "or run `python -m python_jobs ingest ...`, and the serve build loop or "
          + "`python -m python_jobs dbt build` builds the tables";

  /** Commands a client session may run: they read, or change only the session itself. */
  private static final Set<String> ALLOWED_COMMANDS = new HashSet<>(Arrays.asList(
      "SetCommand", "ResetCommand", "SetNamespaceCommand", "SetCatalogCommand", "SetPathCommand",
      "SetCatalogAndNamespace", "ExplainCommand", "CreateViewCommand", "DropTempViewCommand",
      "CreateVariable", "DropVariable", "SetVariable", "RefreshTableCommand", "RefreshTable"));

  private static final Map<SparkSession, Boolean> WRITERS = Collections.synchronizedMap(new WeakHashMap<>());
  private static final Map<SparkSession, Boolean> READERS = Collections.synchronizedMap(new WeakHashMap<>());

  /** The rule passes every plan of this session (the serve process's own, which ingests and builds). */
  public static void registerWriter(SparkSession session) {
    WRITERS.put(session, Boolean.TRUE);
    READERS.remove(session);
  }

  public static boolean isWriter(SparkSession session) {
    return WRITERS.containsKey(session);
  }

  /**
   * Drops the table relations every client session has cached (their file listings), so the next query of
   * each sees what a build just wrote. Returns how many sessions it refreshed.
   */
  public static int refreshReaders() {
    SparkSession[] sessions;
    synchronized (READERS) {
      sessions = READERS.keySet().toArray(new SparkSession[0]);
    }
    for (SparkSession session : sessions) {
      session.sessionState().catalog().invalidateAllCachedTables();
    }
    return sessions.length;
  }

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectCheckRule(new AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
      @Override
      public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
        return new AbstractFunction1<LogicalPlan, BoxedUnit>() {
          @Override
          public BoxedUnit apply(LogicalPlan plan) {
            if (!isWriter(session)) {
              READERS.put(session, Boolean.TRUE);
              check(plan);
              // The statement's jobs run in the endpoint's pool, whatever the client's session settings say (a
              // client can pass settings when it connects, which no statement check sees).
              SparkContext context = session.sparkContext();
              context.setLocalProperty(SCHEDULER_POOL, context.getConf().get(POOL_KEY, DEFAULT_POOL));
            }
            return BoxedUnit.UNIT;
          }
        };
      }
    });
    return BoxedUnit.UNIT;
  }

  /** Refuses the plan of a client session that would write or reach outside the warehouse's tables. */
  static void check(LogicalPlan plan) {
    plan.foreachWithSubqueries(new AbstractFunction1<LogicalPlan, BoxedUnit>() {
      @Override
      public BoxedUnit apply(LogicalPlan node) {
        checkNode(node);
        scala.collection.Iterator<Expression> expressions = node.expressions().iterator();
        while (expressions.hasNext()) {
          expressions.next().foreach(new AbstractFunction1<Expression, BoxedUnit>() {
            @Override
            public BoxedUnit apply(Expression expression) {
              String name = expression.getClass().getSimpleName();
              if (name.equals("CallMethodViaReflection") || name.equals("TryReflect")) {
                throw new WriteRefused(
                    "reflect, java_method and try_reflect are refused on the SQL endpoint: they call Java methods "
                        + "in the server process");
              }
              return BoxedUnit.UNIT;
            }
          });
        }
        return BoxedUnit.UNIT;
      }
    });
  }

  private static void checkNode(LogicalPlan node) {
    String name = node.getClass().getSimpleName();
    if (name.equals("ScriptTransformation")) {
      throw new WriteRefused("SELECT TRANSFORM is refused on the SQL endpoint: it runs a program on the server");
    }
    if (node instanceof LogicalRelation && ((LogicalRelation) node).catalogTable().isEmpty()) {
      throw new WriteRefused("queries over files by path are refused on the SQL endpoint: query the warehouse's "
          + "tables (SHOW DATABASES, SHOW TABLES IN lineage)");
    }
    if (node instanceof DataSourceV2Relation && ((DataSourceV2Relation) node).identifier().isEmpty()) {
      throw new WriteRefused("queries over files by path are refused on the SQL endpoint: query the warehouse's "
          + "tables (SHOW DATABASES, SHOW TABLES IN lineage)");
    }
    if (!(node instanceof Command)) {
      return;
    }
    String statement = describe(name);
    boolean allowed = ALLOWED_COMMANDS.contains(name) || name.startsWith("Show") || name.startsWith("Describe");
    if (node instanceof CreateViewCommand) {
      allowed = ((CreateViewCommand) node).viewType() == LocalTempView$.MODULE$;
      if (((CreateViewCommand) node).viewType() == GlobalTempView$.MODULE$) {
        statement = "CREATE GLOBAL TEMPORARY VIEW (" + name + ")";
      }
    } else if (node instanceof DropTempViewCommand) {
      allowed = ((DropTempViewCommand) node).ident().namespace().length == 0;
    } else if (node instanceof SetCommand) {
      Option<Tuple2<String, Option<String>>> kv = ((SetCommand) node).kv();
      if (kv.isDefined() && kv.get()._2().isDefined() && kv.get()._1().trim().equalsIgnoreCase(POOL_KEY)) {
        throw new WriteRefused("the SQL endpoint's scheduler pool (" + POOL_KEY + ") is set by the server");
      }
    }
    if (!allowed) {
      throw new WriteRefused("the SQL endpoint is read-only and refuses " + statement + "; " + WHERE_WRITES_GO);
    }
  }

  /** A command's class as the statement a user wrote, e.g. InsertIntoHadoopFsRelationCommand: INSERT. */
  static String describe(String className) {
    String commandClass = className.replace("$", "");
    String kind = commandClass.replaceAll("(Command|Exec)$", "");
    String words = kind.replaceAll("([a-z])([A-Z])", "$1 $2").toUpperCase();
    if (words.startsWith("INSERT")) {
      words = "INSERT";
    }
    return words + " (" + commandClass + ")";
  }

  /** Shown to the client as the statement's error; toString is the message alone (no class name). */
  public static final class WriteRefused extends RuntimeException {
    public WriteRefused(String message) {
      super(message);
    }

    @Override
    public String toString() {
      return getMessage();
    }
  }
}
