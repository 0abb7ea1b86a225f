"""PyFlink's module layout over sessioncluster: ``sessioncluster run`` resolves a program's
``import pyflink...`` lines to these modules (for that program's process only)."""

