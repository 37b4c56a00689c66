package World;
# What the reference Perl framework apps share: their database (the one a cell's setup
# filled, apps/data/make_world.py: where the cell started PostgreSQL, the descriptor it
# wrote in the run directory's copy of apps/, data/database.json; else the SQLite file
# beside it; SERVERBENCH_DATABASE names another, a .sqlite file or a .json descriptor), a
# connection per process opened in it (never across a fork), and TechEmpower's rules
# for its test types.
use strict;
use warnings;
use DBI;
use File::Basename qw(dirname);
use File::Spec;
use JSON::PP ();
use List::Util qw(shuffle);

our $DIR = dirname(File::Spec->rel2abs(__FILE__));
our $DATABASE = descriptor($ENV{SERVERBENCH_DATABASE});
use constant WORLD_ROWS => 10_000;
use constant ADDED_FORTUNE => 'Additional fortune added at request time.';

my ($handle, $owner) = (undef, 0);

# {engine => 'sqlite', path => ...} or {engine => 'postgresql', host => <socket directory>,
# port, dbname, user}.
sub descriptor {
    my ($named) = @_;
    my $path = $named || "$DIR/../../data/database.json";
    if ($path =~ /\.json\z/) {
        if (-e $path || $named) {
            open my $in, '<:raw', $path or die "$path: $!";
            local $/;
            return JSON::PP->new->decode(<$in>);
        }
        $path = "$DIR/../../data/world.sqlite";
    }
    return {engine => 'sqlite', path => $path};
}

sub db {
    if (!$handle || $owner != $$) {
        my $d = $DATABASE;
        if ($d->{engine} eq 'postgresql') {
            $handle = DBI->connect("dbi:Pg:dbname=$d->{dbname};host=$d->{host};port=$d->{port}", $d->{user}, '',
                {RaiseError => 1, AutoCommit => 1, pg_enable_utf8 => 1});
        } else {
            $handle = DBI->connect("dbi:SQLite:dbname=$d->{path}", '', '',
                {RaiseError => 1, AutoCommit => 1, sqlite_unicode => 1, sqlite_see_if_its_a_number => 1});
            $handle->sqlite_busy_timeout(10_000);
        }
        $owner = $$;
    }
    return $handle;
}

# The `queries` parameter: 1 where missing or not a number, else clamped to 1..500.
sub query_count {
    my ($raw) = @_;
    return 1 unless defined $raw && $raw =~ /^\s*(\d+)/;
    my $count = $1 + 0;
    return $count < 1 ? 1 : $count > 500 ? 500 : $count;
}

sub random_id { 1 + int rand WORLD_ROWS }

# Distinct ids: the same row twice in one request's updates would deadlock elsewhere.
sub random_ids {
    my ($count) = @_;
    my %seen;
    while (keys %seen < $count) { $seen{random_id()} = 1 }
    return shuffle keys %seen;
}

sub row {
    my ($id) = @_;
    my $sth = db()->prepare_cached('SELECT id, "randomNumber" FROM "World" WHERE id = ?');
    $sth->execute($id);
    my ($found, $number) = $sth->fetchrow_array;
    $sth->finish;
    return {id => $found + 0, randomNumber => $number + 0};
}

# Written back in id order: two requests' transactions that took their rows in opposite
# orders deadlocked (PostgreSQL aborts one after its deadlock_timeout, a second: a 500 and
# a stalled connection).
sub update_rows {
    my ($rows) = @_;
    my $dbh = db();
    $dbh->begin_work;
    # A failed statement (RaiseError) must not leave the worker's one connection inside the
    # aborted transaction: every later request on it would fail too ("Already in a transaction").
    my $done = eval {
        my $sth = $dbh->prepare_cached('UPDATE "World" SET "randomNumber" = ? WHERE id = ?');
        $sth->execute($_->{randomNumber}, $_->{id}) for sort { $a->{id} <=> $b->{id} } @$rows;
        $dbh->commit;
        1;
    };
    if (!$done) {
        my $error = $@;
        $dbh->rollback;
        die $error;
    }
}

# Every fortune and the one added at request time, sorted by message.
sub sorted_fortunes {
    my $rows = db()->selectall_arrayref('SELECT id, message FROM "Fortune"', {Slice => {}});
    return [sort { $a->{message} cmp $b->{message} } @$rows, {id => 0, message => ADDED_FORTUNE}];
}

1;
