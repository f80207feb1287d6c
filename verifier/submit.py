"""The verifier as a spark-submit application, with `minikafka verify`'s arguments and exit statuses:

    spark-submit --master spark://HOST:7077 verifier/submit.py LOG_DIR ... [--history FILE] [--json] [--output DIR]

The master is spark-submit's. The executors need the minikafka package (``pip install``) and must reach the log
directories under the same paths.
"""

from client.cli.verify import verify_command

if __name__ == "__main__":
    verify_command(prog_name="verify")
