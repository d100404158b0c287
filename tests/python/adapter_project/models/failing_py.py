def explode_on_purpose(frame):
    raise ValueError("intentional failure from failing_py")


def model(dbt, session):
    dbt.config(materialized="table")
    frame = dbt.ref("numbers")
    explode_on_purpose(frame)
    return frame
