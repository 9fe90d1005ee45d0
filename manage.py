#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flakeboard.settings")
    from django.core.management import execute_from_command_line

    from flakeboard.start_up import settings_or_exit

    settings_or_exit()

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
